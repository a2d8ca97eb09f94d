"""CLOSE-6: compaction never splits a call.

CLOSE-6 (closure.md): Compaction never separates a call from its result and
never runs while a call is open.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CLOSE-6 first".

Usage: python proofs/close_6_compaction.py [--out DIR] [--depth K]
Writes DIR/CLOSE-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CLOSE-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
