"""PLAN-7: A cached plan is used only when its executor signature and candidate-family signature equal the current ones and the routing epoch is unchanged.

probe_z3 (probe check by check)

Method:  a hit has equal signatures and epoch; a miss names the first failing check of MISS_ORDER.:the negated claim is unsat.

Usage: python proofs/plan_7_cache_signatures.py [--out DIR]
Writes DIR/PLAN-7.smt2 (default DIR: out/proofs).
"""

import sys

from metis_model.smt import run_proof_script

PROPERTY = "PLAN-7"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
