"""RETRY-3: resume tells unknown from not run.

RETRY-3 (loop.md): Resume never reports an effect as not run when it may have
run: a repair stub is unknown exactly when the call's effect started and the
call is not Safe or has committed, and interrupted otherwise.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports RETRY-3 first".

Usage: python proofs/retry_3_resume_cases.py [--out DIR] [--depth K]
Writes DIR/RETRY-3.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "RETRY-3"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
