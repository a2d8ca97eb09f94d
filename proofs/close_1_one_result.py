"""CLOSE-1: at most one result per occurrence.

CLOSE-1 (closure.md): Each call occurrence receives at most one terminal
result.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-1 first".

Usage: python proofs/close_1_one_result.py [--out DIR] [--depth K]
Writes DIR/CLOSE-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
