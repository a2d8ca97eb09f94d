"""PERM-4: plan admits no mutating effect.

PERM-4 (permissions.md): plan admits no mutating effect.

In plan, every edit or exec call is denied (never ask: an approved ask
would admit the effect).

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_4_plan_no_mutation.py [--out DIR] [--depth K]
Writes DIR/PERM-4.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-4"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
