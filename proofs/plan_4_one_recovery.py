"""PLAN-4: recovery at most once, and never after a commit.

PLAN-4 (plan.md): Recovery proposes at most one alternative, and only if no
effect has committed; nothing is retried automatically after a committed
effect.

The turn system (`_exec.protocol_step` over three step slots): no recovery
after an effect committed, and never a second one.

Method: not-bad holds initially and is kept by every step (1-induction).

Usage: python proofs/plan_4_one_recovery.py [--out DIR]
Writes DIR/PLAN-4.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "PLAN-4"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
