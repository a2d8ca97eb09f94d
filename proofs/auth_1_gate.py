"""AUTH-1: no effect without allow or approval.

AUTH-1 (permissions.md): No effect starts without a prior allow, or an
approved ask, for that call occurrence.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports AUTH-1 first".

Usage: python proofs/auth_1_gate.py [--out DIR] [--depth K]
Writes DIR/AUTH-1.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "AUTH-1"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
