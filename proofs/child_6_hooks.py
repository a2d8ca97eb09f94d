"""CHILD-6: hooks run before decisions, vetoes deny.

CHILD-6 (children.md): A hook in force is enforced: every hook that covers a
call ran before its decision unless the gate denied first, a veto became a
deny, and every descendant keeps every hook of its parent.

Per trace (hooks enforced before each decision); inheritance across a tree
of traces is checked by check_trace_tree, not proved here.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CHILD-6 first".

Usage: python proofs/child_6_hooks.py [--out DIR] [--depth K]
Writes DIR/CHILD-6.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CHILD-6"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
