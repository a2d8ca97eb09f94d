"""CHILD-4: the spawn guard checks in order, and admits nothing past a limit.

CHILD-4 (children.md): The spawn guard checks depth, then total, then
per-parent, then concurrency, then duplicate task, and no admitted spawn
exceeds a limit.

`guard_decision` mirrored as z3 terms over unbounded limits and counts: it
admits exactly when admitting breaks no limit and is no unforced duplicate,
else it refuses with the first check (in `GUARD_ORDER`) that admitting would
break; an admitted spawn leaves the child's depth, the total, the parent's
count and the running count within their limits. And the guard's ledger
(`admit`, `finish`) as a transition system: every count stays within its
limit over any sequence of spawns and child ends.

Method: the negated claim is unsat (for every input); the ledger invariant
holds initially and is 1-inductive.

Usage: python proofs/child_4_spawn_guard.py [--out DIR] [--depth K]
Writes DIR/CHILD-4.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CHILD-4"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
