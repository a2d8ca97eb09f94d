"""PLAN-6: a resume never repeats a committed mutation.

PLAN-6 (plan.md): A resumed turn rebuilds its completed steps as done state,
and never repeats a committed mutation.

The turn system: a resume keeps the done state, so a step whose effect
committed never runs again (strengthened by: a pending step never ran).

Method: the lemmas and not-bad hold initially and are kept by every step
(1-induction).

Usage: python proofs/plan_6_resume_done_state.py [--out DIR]
Writes DIR/PLAN-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
