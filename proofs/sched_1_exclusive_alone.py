"""SCHED-1: exclusive runs alone.

SCHED-1 (scheduler.md): An Exclusive call's execution interval overlaps no
other foreground call's interval.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-1 first".

Usage: python proofs/sched_1_exclusive_alone.py [--out DIR] [--depth K]
Writes DIR/SCHED-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
