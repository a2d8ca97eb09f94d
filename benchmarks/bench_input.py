"""What strict reading costs: a trace read through the hardened layer against
the reading it replaced, side by side in one run.

Before: `json.loads` per line, then `validate_python` (lax: `"seq": "2"`
coerced, `NaN` accepted). Now: `decode_json` (no NaN/Infinity, bounded depth
and integers, no repeated keys) and pydantic's strict `validate_json` on the
line. Recorded: microseconds per line for each and their ratio. Asserted:
the strict reader grows with the trace as the lax one does (the per-line
cost at 100,000 lines over 10,000, for each, within 1.5 of each other: both
keep every event, and Python's collector makes both grow a little).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache

from _timing import best_of
from pydantic import TypeAdapter

from metis_check._generate import flat_run
from metis_trace import TraceEvent
from metis_trace import dumps_trace
from metis_trace import read_trace

_EVENTS: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


@cache
def _lines(calls: int) -> list[str]:
    return dumps_trace(*flat_run(calls)).split("\n")


def _before(lines: list[str]) -> int:
    events = [_EVENTS.validate_python(json.loads(line)) for line in lines[1:] if line]
    return len(events)


def _now(lines: list[str]) -> int:
    return len(read_trace(lines)[1])


def test_strict_reading_against_the_lax_reading(benchmark) -> None:  # type: ignore[no-untyped-def]
    lines = _lines(12_500)  # about 100,000 events
    before = best_of(lambda: _before(lines))
    now = best_of(lambda: _now(lines))
    benchmark.pedantic(_now, args=(lines,), rounds=3, iterations=1)
    benchmark.extra_info["before_us_per_line"] = round(before / len(lines) * 1e6, 2)
    benchmark.extra_info["strict_us_per_line"] = round(now / len(lines) * 1e6, 2)
    benchmark.extra_info["ratio"] = round(now / before, 2)


def test_strict_reading_grows_as_the_lax_reading(benchmark) -> None:  # type: ignore[no-untyped-def]
    small, large = _lines(1_250), _lines(12_500)

    def growth(read: Callable[[list[str]], int]) -> float:
        per_large = best_of(lambda: read(large)) / len(large)
        return per_large / (best_of(lambda: read(small)) / len(small))

    strict, lax = growth(_now), growth(_before)
    benchmark.extra_info["strict_growth"] = round(strict, 3)
    benchmark.extra_info["lax_growth"] = round(lax, 3)
    benchmark.pedantic(_now, args=(large,), rounds=1, iterations=1)
    assert strict / lax < 1.5
