"""The dispatch pairs: four-class mediation against forced serialization.

For each batch: a warm-up run per side; each call alone (between the pairs,
round robin, so the critical path sees the same load as the pairs); `pairs`
matched pairs in alternating order (four-class first in even pairs); then
serial runs with a CPU observer for the work bound. The result carries the
paper's paired statistics (`PairedStats`), the raw pairs, each call's time
alone and the bounds (specs/scheduler.md).

Targets (issue 17, the paper's RQ2): on the I/O-bound batch, a median ratio
four-class/serial at or below 0.545 and a makespan at most 1.15 times the
critical path.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_trace import TraceEvent

from .._stats import Pair
from .._stats import PairedStats
from .._stats import stats_of_pairs
from ._batches import BATCHES
from ._batches import IN_PROCESS
from ._batches import PARTNERS
from ._batches import Batch
from ._batches import seed_tree
from ._run import CpuObserver
from ._run import durations
from ._run import forced_chain
from ._run import io_run

TARGET_RATIO = 0.545
TARGET_MAKESPAN = 1.15
SIDES = ("four-class", "serial")


@attrs.frozen
class Bounds:
    """What no schedule beats, in milliseconds (module doc of `_run`)."""

    critical_path_ms: float
    forced_chain_ms: float
    longest_call: str
    longest_call_ms: float
    in_process_sum_ms: float
    batch_cpu_ms: float
    cores: int

    @property
    def work_bound_ms(self) -> float:
        return self.batch_cpu_ms / self.cores

    @property
    def floor_ms(self) -> float:
        """The best makespan this machine allows."""
        return max(self.critical_path_ms, self.work_bound_ms, self.in_process_sum_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self),
            "work_bound_ms": self.work_bound_ms,
            "floor_ms": self.floor_ms,
        }


@attrs.frozen
class BatchResult:
    """One batch: the pairs (a = four-class, b = serial), their statistics,
    each call's median time alone, and the bounds."""

    batch: str
    calls: tuple[str, ...]
    pairs: tuple[Pair, ...]
    stats: PairedStats
    alone_ms: tuple[float, ...]
    bounds: Bounds

    @property
    def makespan_ms(self) -> float:
        return self.stats.median_a_ms

    @property
    def makespan_over_critical_path(self) -> float:
        return self.makespan_ms / self.bounds.critical_path_ms

    @property
    def makespan_over_floor(self) -> float:
        return self.makespan_ms / self.bounds.floor_ms

    @property
    def best_ratio(self) -> float:
        """The ratio a schedule at the floor would reach against these serial runs."""
        return self.bounds.floor_ms / self.stats.median_b_ms

    @property
    def meets_targets(self) -> bool:
        return (
            self.stats.median_ratio <= TARGET_RATIO
            and self.makespan_over_critical_path <= TARGET_MAKESPAN
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "calls": list(self.calls),
            "stats": self.stats.to_json(),
            "alone_ms": list(self.alone_ms),
            "bounds": self.bounds.to_json(),
            "makespan_ms": self.makespan_ms,
            "makespan_over_critical_path": self.makespan_over_critical_path,
            "makespan_over_floor": self.makespan_over_floor,
            "best_ratio_on_this_machine": self.best_ratio,
            "targets": {"ratio": TARGET_RATIO, "makespan_over_critical_path": TARGET_MAKESPAN},
            "meets_targets": self.meets_targets,
        }


def _label(call: tuple[str, dict[str, Any]]) -> str:
    tool, args = call
    text = args.get("command") or args.get("pattern") or args.get("path") or ""
    return f"{tool}: {text}"[:60]


def _alone(root: Path, batch: str, calls: Batch, i: int) -> float:
    """Call `i` alone (with the partners it cannot run without)."""
    group = sorted({i, *PARTNERS.get(batch, {}).get(i, ())})
    _, events = io_run(root, [calls[j] for j in group], "serial", "alone")
    return durations(events)[f"1.{group.index(i)}"]


def run_batch(
    root: Path,
    batch: str,
    pairs: int,
    *,
    cpu_runs: int = 7,
    progress: Callable[[str], None] | None = None,
) -> BatchResult:
    """The paired study of one batch in `root` (a fresh directory)."""
    calls = BATCHES[batch]
    seed_tree(root)
    for side in SIDES:  # warm the page cache and the shell analyzer on each side
        io_run(root, calls, side, "warm")
    alone: dict[int, list[float]] = {i: [] for i in range(len(calls))}
    for i in range(len(calls)):
        alone[i].append(_alone(root, batch, calls, i))
    spans: dict[str, list[float]] = {s: [] for s in SIDES}
    firsts: list[str] = []
    last_events: Sequence[TraceEvent] = ()
    for k in range(pairs):
        order = SIDES if k % 2 == 0 else SIDES[::-1]
        firsts.append("a" if order[0] == "four-class" else "b")
        for side in order:
            span, events = io_run(root, calls, side, side)
            spans[side].append(span)
            if side == "four-class":
                last_events = events
        i = k % len(calls)
        alone[i].append(_alone(root, batch, calls, i))
        if progress is not None:
            progress(f"{batch}: pair {k + 1}/{pairs}")
    cpu = []
    for _ in range(cpu_runs):
        observer = CpuObserver()
        io_run(root, calls, "serial", "cpu", observer)
        cpu.append(observer.seconds)
    raw = tuple(
        Pair(k, a, b, first)
        for k, (a, b, first) in enumerate(
            zip(spans["four-class"], spans["serial"], firsts, strict=True)
        )
    )
    median_alone = {i: statistics.median(v) for i, v in alone.items()}
    chain = forced_chain(calls, median_alone, last_events)
    longest = max(median_alone, key=median_alone.__getitem__)
    bounds = Bounds(
        critical_path_ms=max(median_alone[longest], chain) * 1000,
        forced_chain_ms=chain * 1000,
        longest_call=_label(calls[longest]),
        longest_call_ms=median_alone[longest] * 1000,
        in_process_sum_ms=sum(v for i, v in median_alone.items() if calls[i][0] in IN_PROCESS)
        * 1000,
        batch_cpu_ms=statistics.median(cpu) * 1000,
        cores=len(os.sched_getaffinity(0)),
    )
    return BatchResult(
        batch=batch,
        calls=tuple(_label(c) for c in calls),
        pairs=raw,
        stats=stats_of_pairs(raw, SIDES),
        alone_ms=tuple(median_alone[i] * 1000 for i in range(len(calls))),
        bounds=bounds,
    )


@attrs.frozen
class DispatchStudy:
    batches: tuple[BatchResult, ...]

    def batch(self, name: str) -> BatchResult:
        return next(b for b in self.batches if b.batch == name)

    def to_json(self) -> dict[str, Any]:
        return {"batches": [b.to_json() for b in self.batches]}


def dispatch_study(
    batches: Sequence[str] = ("cpu", "io"),
    pairs: int = 30,
    *,
    cpu_runs: int = 7,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> DispatchStudy:
    """Each batch's paired study, side by side in one run."""
    unknown = [b for b in batches if b not in BATCHES]
    if unknown:
        raise ValueError(f"unknown batch {unknown[0]!r} (valid: {', '.join(BATCHES)})")
    with tempfile.TemporaryDirectory(prefix="metis-dispatch-", dir=workdir) as tmp:
        out = []
        for name in batches:
            root = Path(tmp) / name / "ws"
            root.mkdir(parents=True)
            out.append(run_batch(root, name, pairs, cpu_runs=cpu_runs, progress=progress))
        return DispatchStudy(tuple(out))
