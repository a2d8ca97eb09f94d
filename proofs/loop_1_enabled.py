"""LOOP-1: every event enabled in its phase.

LOOP-1 (loop.md): Every event is enabled in the loop phase in which it occurs.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports LOOP-1 first".

Usage: python proofs/loop_1_enabled.py [--out DIR] [--depth K]
Writes DIR/LOOP-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "LOOP-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
