"""PERM-1: the staged order is total: one stage decides.

PERM-1 (permissions.md): Every recorded decision, with its deciding stage,
equals the staged resolution of its recorded facts.

Every fact combination has exactly one deciding stage (the first that
applies; `mode` always applies), and `resolve` reports that stage.

Method: the negated claim over symbolic facts (len(RuleBehavior) + 1 rule
slots, unbounded recency) is unsat, so the claim holds for every input.

Usage: python proofs/perm_1_total_order.py [--out DIR] [--depth K]
Writes DIR/PERM-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PERM-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
