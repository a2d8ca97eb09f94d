"""RETRY-2: commits in the trace before reports.

RETRY-2 (loop.md): Every commit is in the trace before it is reported, and
every report of it is that commit: an effect ends committed only after its
commit event; a resumed run answers only calls whose commit the trace holds
and never stubs one; each result of a committed call carries the committed
effect's outcome and output. The loop system has no result contents: the proof covers
the first three clauses (the repair that stubs a committed call included),
the content digest is checked by `check_trace` and its tests alone.

Method: the loop protocol of metis_proofs._system; BMC by iterative
deepening (default depth 20, assumption literals), then k-induction over
Houdini lemmas: `proved` when induction closes, else `bounded(depth)`.
The property is "check_trace never reports RETRY-2 first".

Usage: python proofs/retry_2_commits.py [--out DIR] [--depth K]
Writes DIR/RETRY-2.smt2 (default DIR: out/proofs).
"""

import sys

from metis_proofs import run_proof_script

PROPERTY = "RETRY-2"

if __name__ == "__main__":
    sys.exit(run_proof_script(PROPERTY, sys.argv[1:]))
