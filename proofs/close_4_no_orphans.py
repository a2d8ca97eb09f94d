"""CLOSE-4: no result without an open call.

CLOSE-4 (closure.md): No result exists without a matching open call
occurrence.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-4 first".

Usage: python proofs/close_4_no_orphans.py [--out DIR] [--depth K]
Writes DIR/CLOSE-4.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-4"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
