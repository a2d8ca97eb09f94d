"""Replay throughput of `check_trace` (issue: >= 500,000 events/s for a flat trace).

Ratios, measured side by side in this run:
- per-event cost at 10^3..10^6 events relative to 10^3 (linear growth: ~1.0);
- per-call cost of one batch of 2,000 calls relative to one of 250 (the
  replay keeps counters instead of scanning the batch: ~1.0);
- the fast replay relative to folding the specification's `step`.
Events per second are recorded in `extra_info` for the record, not asserted.
"""

from __future__ import annotations

import functools
from functools import cache

import pytest
from _timing import best_of

from metis_check import check_trace
from metis_check._generate import flat_run
from metis_check._wide import wide_batch
from metis_trace import TraceEvent
from metis_trace import TraceHeader

SIZES = (1_000, 10_000, 100_000, 1_000_000)


@cache
def _trace(events: int):  # type: ignore[no-untyped-def]
    return flat_run(max(1, (events - 4) // 8))


@cache
def _wide(width: int) -> tuple[TraceHeader, list[TraceEvent]]:
    """One batch of `width` allowed calls, run by their class: every fourth
    queues on one key (each waits for the one before), the last is exclusive
    (it waits for all), the rest are safe and run together."""
    return wide_batch(width, denied=None)


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
        per_event[size] = best_of(functools.partial(check_trace, events, header)) / len(events)
    base = per_event[SIZES[0]]
    for size in SIZES:
        benchmark.extra_info[f"per_event_ratio_{size}"] = round(per_event[size] / base, 3)
    header, events = _trace(SIZES[-1])
    benchmark.pedantic(check_trace, args=(events, header), rounds=1, iterations=1)
    # Linear: a thousand times more events cost about a thousand times more.
    assert per_event[SIZES[-1]] / base < 3.0


def test_wide_batch_costs_linear(benchmark) -> None:  # type: ignore[no-untyped-def]
    per_call = {}
    for width in (250, 2_000):
        header, events = _wide(width)
        assert check_trace(events, header).ok
        per_call[width] = best_of(functools.partial(check_trace, events, header), 5) / width
    ratio = per_call[2_000] / per_call[250]
    benchmark.extra_info["per_call_ratio_2000_to_250"] = round(ratio, 3)
    benchmark.extra_info["calls_per_s_2000"] = round(1 / per_call[2_000])
    header, events = _wide(2_000)
    benchmark.pedantic(check_trace, args=(events, header), rounds=3, iterations=1)
    # Linear: eight times the calls cost about eight times as much (O(b^2): 8x per call).
    assert ratio < 3.0


def test_fast_replay_against_the_specification_fold(benchmark) -> None:  # type: ignore[no-untyped-def]
    header, events = _trace(100_000)
    slow = best_of(lambda: check_trace(events, header, reference=True), repeats=1)
    benchmark.pedantic(check_trace, args=(events, header), rounds=3, iterations=1)
    fast = benchmark.stats.stats.min
    benchmark.extra_info["speedup_over_step_fold"] = round(slow / fast, 2)
