"""PLAN-6: A resumed turn rebuilds its completed steps as done state, and never repeats a committed mutation.

The turn system

Method:  a resume keeps the done state, so a committed step never runs again.:the lemmas and not-bad hold initially and are kept by every step (1-induction).

Usage: python proofs/plan_6_resume_done_state.py [--out DIR]
Writes DIR/PLAN-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_model.smt import run_proof_script

PROPERTY = "PLAN-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
