"""CLOSE-5: repair stubs exactly the open calls.

CLOSE-5 (closure.md): Repair after an interruption stubs exactly the open
occurrences, so repeating it changes nothing.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-5 first".

Usage: python proofs/close_5_repair.py [--out DIR] [--depth K]
Writes DIR/CLOSE-5.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-5"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
