"""PERM-3: bypass-immune checks hold in every mode.

PERM-3 (permissions.md): Bypass-immune checks hold in every mode: a protected-
path or secret call is never allowed, in any mode, bypassPermissions included.

A protected-path or secret call is never allowed, in every mode
(bypassPermissions included).

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_3_bypass_immune.py [--out DIR] [--depth K]
Writes DIR/PERM-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
