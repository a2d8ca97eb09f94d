"""CHILD-2: a child gate is never more permissive.

CHILD-2 (children.md): A child's mode is never more permissive than its
parent's.

Monotonicity of `resolve` under a narrower child gate: a mode at most the
parent's (`mode_at_most`), plus added deny/ask rules, minus allow rules,
never raises the decision rank (deny < ask < allow). Also: the cloned
child mode of `child_authority` is at most the parent's, and `mode_at_most`
is a partial order.

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/child_2_monotone_gate.py [--out DIR] [--depth K]
Writes DIR/CHILD-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CHILD-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
