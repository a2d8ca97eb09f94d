"""`metis demo`'s rows for the conformance channel (issue 11): the sweep of
`metis explore`, one model-driven workload per situation through the real
runtime (kills as processes, then a resume), every trace and tree checked,
every situation read back from the traces, with the throughput. (The
mutation score takes minutes per fault: `make mutate`, table in the README.)

Rows are `(part, check, ok, detail)`; `_demo` makes them its `Row`s.
"""

from __future__ import annotations

import time
from pathlib import Path

RowFields = tuple[str, str, bool, str]


def explore_rows(folder: Path) -> list[RowFields]:
    from metis_studies.explore import REQUIRED
    from metis_studies.explore import check_outcome
    from metis_studies.explore import execute
    from metis_studies.explore import situations
    from metis_studies.explore import sweep

    work = folder / "explore"
    reached: dict[str, int] = {}
    events = runs = 0
    checking = 0.0
    findings: list[str] = []
    start = time.monotonic()
    for n, (focus, workload) in enumerate(sweep()):
        outcome = execute(workload, work / f"{n:02d}-{focus.replace(':', '-')}", "in-process")
        t0 = time.monotonic()
        verdict = check_outcome(outcome)
        checking += time.monotonic() - t0
        runs += 1
        events += verdict.events
        findings += [f"{focus}: {f.one_line()}" for f in verdict.findings]
        for s, count in situations(verdict.traces, workload).items():
            reached[s] = reached.get(s, 0) + count
    seconds = max(time.monotonic() - start, 1e-9)
    never = [s for s in REQUIRED if not reached.get(s)]
    figures = (
        f"{runs} workloads, {events} events in {seconds:.0f}s:"
        f" {60 * runs / seconds:.0f} workloads/min, {events / max(checking, 1e-9):,.0f}"
        " events checked/s"
    )
    return [
        (
            "explore",
            "the sweep through the real runtime conforms (every trace and tree)",
            not findings,
            findings[0] if findings else figures,
        ),
        (
            "explore",
            "every situation earlier workloads never reached, read from the traces",
            not never,
            f"never: {', '.join(never)}" if never else f"{len(REQUIRED)}/{len(REQUIRED)} reached",
        ),
    ]
