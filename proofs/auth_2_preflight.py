"""AUTH-2: batch preflight before any effect.

AUTH-2 (permissions.md): Within a batch, every call is decided and every ask
resolved before any effect of the batch starts.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports AUTH-2 first".

Usage: python proofs/auth_2_preflight.py [--out DIR] [--depth K]
Writes DIR/AUTH-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "AUTH-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
