"""CLOSE-3: results in call order.

CLOSE-3 (closure.md): Results are returned to the provider in call order, one
per occurrence.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-3 first".

Usage: python proofs/close_3_order.py [--out DIR] [--depth K]
Writes DIR/CLOSE-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
