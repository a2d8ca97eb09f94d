"""PLAN-12: A framework runs only within the step cap, and the cap never exceeds the hard maximum

 neither proposer output nor the cache can raise it.

Method: framework_z3 validated under the stored and the current cap: at most min(current cap, 16) steps, for every integer cap.:the negated claim is unsat.

Usage: python proofs/plan_12_step_cap.py [--out DIR]
Writes DIR/PLAN-12.smt2 (default DIR: out/proofs).
"""

import sys

from metis_model.smt import run_proof_script

PROPERTY = "PLAN-12"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
