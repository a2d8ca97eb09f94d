"""Throughput of the Claude Code transcript check (issue: a 3 MB session well under 1 s).

The session is built from real lines (tests/data/transcripts/claude-code),
renumbered copy after copy and chained into one long thread. Recorded, not
asserted: seconds for the 3 MB session and bytes per second. Asserted: the
per-byte cost at 3 MB relative to 0.3 MB, measured side by side (linear: ~1.0).
"""

from __future__ import annotations

import copy
import json
from functools import cache, partial
from pathlib import Path
from typing import Any

from _timing import best_of

from metis_check.transcripts import check_transcript

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "transcripts" / "claude-code"
SIZES = (300_000, 3_000_000)


def _renumbered(records: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    out = copy.deepcopy(records)
    for record in out:
        for key in ("uuid", "parentUuid", "logicalParentUuid", "sourceToolAssistantUUID"):
            if isinstance(record.get(key), str):
                record[key] = f"{record[key]}-{suffix}"
        message = record.get("message")
        if record.get("type") == "assistant" and isinstance(message, dict):
            message["id"] = f"{message.get('id')}-{suffix}"
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                block["id"] = f"{block['id']}-{suffix}"
            if "tool_use_id" in block:
                block["tool_use_id"] = f"{block['tool_use_id']}-{suffix}"
    return out


@cache
def _session(target_bytes: int) -> tuple[str, ...]:
    base = [
        json.loads(line)
        for name in ("subagent.jsonl", "tool_heavy.jsonl")
        for line in (DATA / name).read_text().splitlines()
        if line.strip()
    ]
    lines: list[str] = []
    size, copy_number, last = 0, 0, None
    while size < target_bytes:
        for record in _renumbered(base, str(copy_number)):
            if "uuid" in record and record.get("parentUuid") is None and last is not None:
                record["parentUuid"] = last
            if record.get("type") in ("user", "assistant"):
                last = record["uuid"]
            lines.append(json.dumps(record))
            size += len(lines[-1]) + 1
        copy_number += 1
    return tuple(lines)


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
