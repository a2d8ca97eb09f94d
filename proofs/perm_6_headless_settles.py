"""PERM-6: headless never leaves an ask pending.

PERM-6 (permissions.md): Headless resolution never waits on ask: every ask
resolves at once to the configured default.

On the headless and background routes an ask settles at once to the
configured default (`settle_ask`): no pending ask is ever returned.

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_6_headless_settles.py [--out DIR] [--depth K]
Writes DIR/PERM-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
