"""PLAN-12: the step cap is never raised.

PLAN-12 (plan.md): A framework runs only within the step cap, and the cap
never exceeds the hard maximum: neither proposer output nor the cache can
raise it.

`framework_z3` (the shape, cap and reference checks of `validate`) for a
framework validated under the cap it was stored with and again under the
current one: at most min(current cap, 16) steps, for every integer cap.

Method: the negated claim is unsat.

Usage: python proofs/plan_12_step_cap.py [--out DIR]
Writes DIR/PLAN-12.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-12"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
