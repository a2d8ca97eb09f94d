"""The loop's results message as the provider gets it (specs/closure.md,
CLOSE-3; `metis_runtime/_session.py` `results_message`, `_loop.py`).

- `results:job-note`: a background job that ends while a later foreground
  call runs; its note ("[background job ... ended: ...]") goes into that
  batch's results message, after the tool results (the Messages API reads
  `tool_result` blocks first in a user message). The workload runs in
  process, so the request bodies as posted are kept (`_wire.py`) and checked
  like every in-process run's; this case makes sure one of them carries a
  note beside its results.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from metis_trace import Mode

from ._mech_case import Case
from ._mech_read import Traces, script
from ._pieces import bash
from ._wire import SENT
from ._workload import Workload

NOTE = "[background job"


def job_note() -> Workload:
    job = bash("sleep 0.2; echo done > job.txt", background=True)
    wait = bash("until test -s job.txt; do sleep 0.05; done; sleep 0.5")
    return Workload(
        name="mech-results:job-note",
        aims=("results:job-note",),
        turns=script([job], [wait]),
        mode=Mode.BYPASS,
    )


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    path = root / SENT
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else ():
        last = (json.loads(line).get("messages") or [{}])[-1]
        blocks = last.get("content") if isinstance(last.get("content"), list) else []
        kinds = [b.get("type") for b in blocks]
        notes = [b for b in blocks if b.get("type") == "text" and NOTE in str(b.get("text"))]
        if "tool_result" in kinds and notes:
            seen["results:job-note"] += 1
    return seen


CASES = (
    Case(
        "results:job-note",
        "loop",
        ("results:job-note",),
        job_note,
        reached,
        execution="in-process",  # the bodies as posted are kept in process only
    ),
)
