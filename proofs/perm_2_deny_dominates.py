"""PERM-2: deny dominates any allow.

PERM-2 (permissions.md): Deny dominates: if any deny rule matches a call, the
decision is deny.

Any matching deny rule gives deny, so in particular a deny rule beats an
allow rule of lower or equal source authority.

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_2_deny_dominates.py [--out DIR] [--depth K]
Writes DIR/PERM-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
