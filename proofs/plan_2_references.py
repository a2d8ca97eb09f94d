"""PLAN-2: references read completed earlier steps.

PLAN-2 (plan.md): References resolve only to completed earlier steps.

For frameworks of any length, by induction over the steps: at step i, with any
batch numbering non-decreasing on the steps before it (the hypothesis, which
the rule of `batches` keeps), every reference that `validate` accepts points
to an earlier step in an earlier batch, so it has completed when its reader's
batch starts.

Method: the negated claim is unsat.

Usage: python proofs/plan_2_references.py [--out DIR]
Writes DIR/PLAN-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
