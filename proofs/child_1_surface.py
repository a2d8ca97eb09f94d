"""CHILD-1: a child sees no tool its parent lacks.

CHILD-1 (children.md): A child's tool surface is a subset of its parent's.

Spawn events of the protocol carry `child_authority`'s surface; the
mirror flags a child tool the parent lacks.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports CHILD-1 first".

Usage: python proofs/child_1_surface.py [--out DIR] [--depth K]
Writes DIR/CHILD-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "CHILD-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
