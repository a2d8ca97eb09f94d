"""PLAN-8: a cache hit is grounded.

PLAN-8 (plan.md): A cached plan whose mutating arguments are not grounded in
the current request is refused.

`probe_z3`: a hit is grounded in the current request; a miss names the first
failing check.

Method: the negated claim is unsat.

Usage: python proofs/plan_8_cache_grounded.py [--out DIR]
Writes DIR/PLAN-8.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-8"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
