"""Replay throughput of `check_trace` (issue: >= 500,000 events/s for a flat trace).

Ratios, measured side by side in this run:
- per-event cost at 10^3..10^6 events relative to 10^3 (linear growth: ~1.0);
- the fast replay relative to folding the specification's `step`.
Events per second are recorded in `extra_info` for the record, not asserted.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from functools import cache

import pytest

from metis_model import check_trace
from metis_model._generate import flat_run

SIZES = (1_000, 10_000, 100_000, 1_000_000)


@cache
def _trace(events: int):  # type: ignore[no-untyped-def]
    return flat_run(max(1, (events - 4) // 8))


def _best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("size", SIZES)
def test_replay_throughput(benchmark, size: int) -> None:  # type: ignore[no-untyped-def]
    header, events = _trace(size)
    report = benchmark.pedantic(check_trace, args=(events, header), rounds=3, iterations=1)
    assert report.ok
    benchmark.extra_info["events"] = len(events)
    benchmark.extra_info["events_per_s"] = round(len(events) / benchmark.stats.stats.min)


def test_cost_grows_linearly(benchmark) -> None:  # type: ignore[no-untyped-def]
    per_event = {}
    for size in SIZES:
        header, events = _trace(size)
        per_event[size] = _best_of(functools.partial(check_trace, events, header)) / len(events)
    base = per_event[SIZES[0]]
    for size in SIZES:
        benchmark.extra_info[f"per_event_ratio_{size}"] = round(per_event[size] / base, 3)
    header, events = _trace(SIZES[-1])
    benchmark.pedantic(check_trace, args=(events, header), rounds=1, iterations=1)
    # Linear: a thousand times more events cost about a thousand times more.
    assert per_event[SIZES[-1]] / base < 3.0


def test_fast_replay_against_the_specification_fold(benchmark) -> None:  # type: ignore[no-untyped-def]
    header, events = _trace(100_000)
    slow = _best_of(lambda: check_trace(events, header, reference=True), repeats=1)
    benchmark.pedantic(check_trace, args=(events, header), rounds=3, iterations=1)
    fast = benchmark.stats.stats.min
    benchmark.extra_info["speedup_over_step_fold"] = round(slow / fast, 2)
