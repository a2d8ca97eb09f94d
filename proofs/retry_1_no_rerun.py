"""RETRY-1: no automatic re-run after commit.

RETRY-1 (loop.md): An effect that has committed is never re-executed
automatically.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports RETRY-1 first".

Usage: python proofs/retry_1_no_rerun.py [--out DIR] [--depth K]
Writes DIR/RETRY-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "RETRY-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
