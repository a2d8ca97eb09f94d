"""PLAN-2: References resolve only to completed earlier steps.

framework_z3 (the shape, cap and reference checks of validate) and batches_z3 (the batching of batches) over frameworks of up to 18 steps with two references each

Method:  in every valid framework each reference reads a step of an earlier batch.:the negated claim is unsat (for every framework and cap).

Usage: python proofs/plan_2_references.py [--out DIR]
Writes DIR/PLAN-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_model.smt import run_proof_script

PROPERTY = "PLAN-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
