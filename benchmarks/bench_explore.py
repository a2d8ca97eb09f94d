"""`metis explore` throughput: workloads per minute, events checked per second.

One round runs the sweep (each situation once, in its simplest form: in
process, and the kill points as `metis run` processes killed and resumed)
through the real runtime and checks every trace. Recorded in `extra_info`,
side by side from the same round:
- workloads per minute, overall and per execution;
- events checked per second by the model (checking time only), and end to
  end (running and checking);
- the share of the time that is checking: how much of exploring is the model.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from metis_studies.explore import check_outcome
from metis_studies.explore import execute
from metis_studies.explore import sweep


def _round(work: Path) -> dict[str, Any]:
    spent: Counter[str] = Counter()
    count: Counter[str] = Counter()
    events = 0
    checking = 0.0
    for n, (_, workload) in enumerate(sweep()):
        t0 = time.perf_counter()
        outcome = execute(workload, work / f"run-{n}", "in-process")
        t1 = time.perf_counter()
        verdict = check_outcome(outcome)
        t2 = time.perf_counter()
        assert verdict.ok, [f.one_line() for f in verdict.findings]
        spent[outcome.execution] += t2 - t0
        count[outcome.execution] += 1
        events += verdict.events
        checking += t2 - t1
    total = sum(spent.values())
    return {
        "workloads": sum(count.values()),
        "workloads_per_minute": round(60 * sum(count.values()) / total, 1),
        **{f"per_minute_{k}": round(60 * count[k] / spent[k], 1) for k in count},
        "events": events,
        "events_checked_per_s": round(events / checking),
        "events_per_s_end_to_end": round(events / total, 1),
        "checking_share": round(checking / total, 4),
    }


def test_explore_throughput(benchmark) -> None:  # type: ignore[no-untyped-def]
    results: list[dict[str, Any]] = []

    def once() -> None:
        with tempfile.TemporaryDirectory(prefix="metis-bench-explore-") as tmp:
            results.append(_round(Path(tmp)))

    benchmark.pedantic(once, rounds=2, iterations=1)
    best = max(results, key=lambda r: r["workloads_per_minute"])
    benchmark.extra_info.update(best)
