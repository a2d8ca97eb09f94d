"""LOOP-2: completed only after an answer.

LOOP-2 (loop.md): A run ends as completed only after an assistant message with
no tool calls.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports LOOP-2 first".

Usage: python proofs/loop_2_completed.py [--out DIR] [--depth K]
Writes DIR/LOOP-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "LOOP-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
