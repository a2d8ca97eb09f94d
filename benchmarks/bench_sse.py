"""The SSE decoder on a 2 MB line (issue: the old decoder was quadratic on long lines).

A 2 MB `data:` line arrives in 1 KB chunks, as a network delivers it. Measured
side by side in one run: the decoder as it was before (`_Before`, kept here
verbatim in its line handling: it joined the whole pending text to every new
chunk) and the decoder now. Recorded: seconds for each and their ratio.
Asserted: at least 50x faster than before at 2 MB, and the new decoder's
per-chunk cost at 8 MB over 2 MB below 2.5 (quadratic: ~4).
"""

from __future__ import annotations

import time

from _timing import best_of

from metis_runtime.providers import SSEDecoder

CHUNK = 1024


class _Before:
    """The line splitting of the decoder this one replaced."""

    def __init__(self) -> None:
        self._buf = ""
        self._pending_cr = False
        self.lines = 0

    def feed(self, chunk: str) -> None:
        if self._pending_cr and chunk.startswith("\n"):
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith("\r")
        text = self._buf + chunk
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        self._buf = lines.pop()
        self.lines += len(lines)


def _chunks(size: int) -> list[str]:
    line = "data: " + "x" * size + "\n\n"
    return [line[i : i + CHUNK] for i in range(0, len(line), CHUNK)]


def _now(chunks: list[str]) -> None:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    assert len(events) == 1


def _before(chunks: list[str]) -> None:
    decoder = _Before()
    for chunk in chunks:
        decoder.feed(chunk)
    assert decoder.lines == 2


def test_a_2mb_line_before_and_after(benchmark) -> None:  # type: ignore[no-untyped-def]
    chunks = _chunks(2 << 20)
    before = best_of(lambda: _before(chunks), repeats=1)
    after = best_of(lambda: _now(chunks))
    benchmark.pedantic(_now, args=(chunks,), rounds=5, iterations=1)
    benchmark.extra_info["before_s"] = round(before, 4)
    benchmark.extra_info["after_s"] = round(after, 4)
    benchmark.extra_info["speedup"] = round(before / after, 1)
    assert before / after > 50


def _feeds(chunks: list[str]) -> float:
    """Seconds to feed every chunk but the last (the line still open)."""
    decoder = SSEDecoder()
    start = time.perf_counter()
    for chunk in chunks[:-1]:
        decoder.feed(chunk)
    return time.perf_counter() - start


def test_the_decoder_is_linear_in_the_line(benchmark) -> None:  # type: ignore[no-untyped-def]
    """Per-chunk cost of an open line at 8 MB over 2 MB, side by side:
    quadratic gives ~4, linear ~1. The final chunk is left out: it joins the
    line once (linear too), and on this sandbox a fresh multi-megabyte string
    is slow to allocate (page faults at about 25 us a page), which would
    measure the allocator rather than the decoder."""
    small, large = _chunks(2 << 20), _chunks(8 << 20)
    per_large = min(_feeds(large) for _ in range(5)) / len(large)
    per_small = min(_feeds(small) for _ in range(5)) / len(small)
    ratio = per_large / per_small
    benchmark.extra_info["per_chunk_ratio_8mb_over_2mb"] = round(ratio, 3)
    benchmark.pedantic(_now, args=(large,), rounds=1, iterations=1)
    assert ratio < 2.5
