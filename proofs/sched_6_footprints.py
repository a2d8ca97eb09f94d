"""SCHED-6: reads never overlap writes.

SCHED-6 (scheduler.md): A Safe call never overlaps a Queue or Exclusive call of
its batch that writes inside its read footprint; the two run in call order.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-6 first".

Usage: python proofs/sched_6_footprints.py [--out DIR] [--depth K]
Writes DIR/SCHED-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
