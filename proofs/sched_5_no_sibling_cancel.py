"""SCHED-5: cancel needs a cancel or interrupt.

SCHED-5 (scheduler.md): A failing call never cancels its siblings: a cancelled
or skipped result needs a prior cancel or interrupt, and a cancel's cause is
read from events (a recorded source, abstracted as the label `sourced`; a
timeout's recorded limit, as `limit_ok`): specs/proofs.md.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-5 first".

Usage: python proofs/sched_5_no_sibling_cancel.py [--out DIR] [--depth K]
Writes DIR/SCHED-5.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-5"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
