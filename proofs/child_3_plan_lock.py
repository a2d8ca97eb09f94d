"""CHILD-3: plan parent, plan-locked child.

CHILD-3 (children.md): A plan parent means a plan child, and a plan-locked
child has no spawning or mode-changing tools.

A plan parent's child is plan, and a plan child keeps no spawning or
mode-changing tool.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CHILD-3 first".

Usage: python proofs/child_3_plan_lock.py [--out DIR] [--depth K]
Writes DIR/CHILD-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CHILD-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
