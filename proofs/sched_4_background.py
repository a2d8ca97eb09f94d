"""SCHED-4: background handshake pairing.

SCHED-4 (scheduler.md): A Background call returns a handshake with a job id,
and its completion is paired with exactly that handshake.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports SCHED-4 first".

Usage: python proofs/sched_4_background.py [--out DIR] [--depth K]
Writes DIR/SCHED-4.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "SCHED-4"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
