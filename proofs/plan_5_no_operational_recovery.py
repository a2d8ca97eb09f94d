"""PLAN-5: An operational error (network, timeout, rate limit, unavailable) is never recovered by switching executors.

The turn system

Method:  a recovery only follows a structural failure.:the lemmas and not-bad hold initially and are kept by every step (1-induction).

Usage: python proofs/plan_5_no_operational_recovery.py [--out DIR]
Writes DIR/PLAN-5.smt2 (default DIR: out/proofs).
"""

import sys

from metis_model.smt import run_proof_script

PROPERTY = "PLAN-5"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
