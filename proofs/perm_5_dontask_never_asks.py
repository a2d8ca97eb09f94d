"""PERM-5: dontAsk never returns ask.

PERM-5 (permissions.md): dontAsk never returns ask.

In dontAsk the decision is never ask.

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_5_dontask_never_asks.py [--out DIR] [--depth K]
Writes DIR/PERM-5.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-5"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
