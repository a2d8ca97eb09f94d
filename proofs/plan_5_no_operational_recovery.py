"""PLAN-5: an operational error is never recovered.

PLAN-5 (plan.md): An operational error (network, timeout, rate limit,
unavailable) is never recovered by switching executors.

The turn system: a recovery follows only a structural failure.

Method: not-bad holds initially and is kept by every step (1-induction).

Usage: python proofs/plan_5_no_operational_recovery.py [--out DIR]
Writes DIR/PLAN-5.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-5"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
