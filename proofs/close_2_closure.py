"""CLOSE-2: closed before next request / end.

CLOSE-2 (closure.md): Every call occurrence has its terminal result before the
next provider request and before the run ends.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-2 first".

Usage: python proofs/close_2_closure.py [--out DIR] [--depth K]
Writes DIR/CLOSE-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
