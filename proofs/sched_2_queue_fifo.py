"""SCHED-2: queue: FIFO per key, no overlap.

SCHED-2 (scheduler.md): Queue calls that share a resource key never overlap
and start in FIFO (call) order.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-2 first".

Usage: python proofs/sched_2_queue_fifo.py [--out DIR] [--depth K]
Writes DIR/SCHED-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
