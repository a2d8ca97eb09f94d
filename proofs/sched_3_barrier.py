"""SCHED-3: exclusive is a barrier.

SCHED-3 (scheduler.md): An Exclusive call is a barrier: it starts after every
earlier admitted call of its batch ended, and no later call starts before it
ends.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-3 first".

Usage: python proofs/sched_3_barrier.py [--out DIR] [--depth K]
Writes DIR/SCHED-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
