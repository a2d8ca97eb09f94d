"""PLAN-7: a cache hit has the current signatures.

PLAN-7 (plan.md): A cached plan is used only when its executor signature and
candidate-family signature equal the current ones and the routing epoch is
unchanged.

`probe_z3` (`probe`, check by check, over symbolic signatures and epochs): a
hit has equal executor and family signatures and an unchanged epoch; a miss
names the first failing check of MISS_ORDER.

Method: the negated claim is unsat.

Usage: python proofs/plan_7_cache_signatures.py [--out DIR]
Writes DIR/PLAN-7.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-7"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
