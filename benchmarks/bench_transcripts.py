"""Throughput of the Claude Code transcript check (issue: a 3 MB session well under 1 s).

The session is built from real lines (tests/data/transcripts/claude-code),
renumbered copy after copy and chained into one long thread: the 3 MB session
of tests/conformance/test_transcripts_claude_code.py (`build_large_session`).
Recorded, not asserted: seconds for the 3 MB session and bytes per second.
Asserted: the per-byte cost at 3 MB relative to 0.3 MB, measured side by side
(linear: ~1.0).
"""

from __future__ import annotations

from functools import cache
from functools import partial

from _timing import best_of

from metis_check.transcripts import check_transcript
from tests.conformance.test_transcripts_claude_code import build_large_session  # run from the root

SIZES = (300_000, 3_000_000)


@cache
def _session(target_bytes: int) -> tuple[str, ...]:
    return tuple(build_large_session(target_bytes))


def _check(lines: tuple[str, ...]) -> object:
    report = check_transcript(lines, "claude-code", "bench")
    assert report.ok
    return report


def test_claude_code_session_3mb(benchmark) -> None:  # type: ignore[no-untyped-def]
    lines = _session(SIZES[-1])
    size = sum(len(line) + 1 for line in lines)
    benchmark.pedantic(_check, args=(lines,), rounds=5, iterations=1)
    benchmark.extra_info["bytes"] = size
    benchmark.extra_info["seconds"] = round(benchmark.stats.stats.min, 4)
    benchmark.extra_info["bytes_per_s"] = round(size / benchmark.stats.stats.min)


def test_claude_code_cost_grows_linearly(benchmark) -> None:  # type: ignore[no-untyped-def]
    per_byte: dict[int, float] = {}
    for target in SIZES:
        lines = _session(target)
        size = sum(len(line) + 1 for line in lines)
        per_byte[target] = best_of(partial(_check, lines)) / size
    ratio = per_byte[SIZES[-1]] / per_byte[SIZES[0]]
    benchmark.extra_info["per_byte_ratio"] = round(ratio, 3)
    benchmark.pedantic(_check, args=(_session(SIZES[-1]),), rounds=1, iterations=1)
    # Linear: ten times the bytes cost about ten times the time.
    assert ratio < 3.0
