"""AUTH-3: no effect outside the tool surface.

AUTH-3 (permissions.md): No effect starts for a call of a tool outside the
trace header's tool surface, at any depth.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports AUTH-3 first".

Usage: python proofs/auth_3_surface.py [--out DIR] [--depth K]
Writes DIR/AUTH-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "AUTH-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
