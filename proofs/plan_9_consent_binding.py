"""PLAN-9: an approval admits only its own action.

PLAN-9 (plan.md): An approval is bound to (owner, turn, action, arguments
digest, destination) and authorizes nothing else; frequency, wording or
silence never create a persistent permission.

`authorizes_z3` over two approvals and an action (the six binding fields): an
approval admits only an equal, unused action, and approvals granted in other
turns admit nothing in this one.

Method: the negated claim is unsat.

Usage: python proofs/plan_9_consent_binding.py [--out DIR]
Writes DIR/PLAN-9.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-9"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
