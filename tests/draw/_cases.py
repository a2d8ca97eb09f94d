"""Inputs the drawing tests share: shortest counterexamples (tests/data/draw), and a Claude Code transcript with one tool result answering no call."""

from __future__ import annotations

from pathlib import Path

from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import read_trace

TESTS = Path(__file__).resolve().parent.parent
DATA = TESTS / "data" / "transcripts" / "claude-code"
TRACES = TESTS / "data" / "draw"


def cex_path(ablation: str) -> Path:
    return TRACES / f"cex_{ablation.replace('-', '_')}.jsonl"


def cex(ablation: str) -> tuple[TraceHeader, list[TraceEvent]]:
    """The shortest counterexample of an ablation, as `metis counterexample` wrote it."""
    return read_trace(cex_path(ablation).read_text().splitlines())


def transcript_with_a_stray_result() -> tuple[str, str]:
    """`tool_heavy.jsonl` with its first tool result answering an id no call
    has: that call is left unanswered (CLOSE-1); returns the text and the id."""
    import json

    lines = (DATA / "tool_heavy.jsonl").read_text().splitlines()
    for n, line in enumerate(lines):
        record = json.loads(line)
        content = record.get("message", {}).get("content")
        if record.get("type") == "user" and isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
            if results:
                call_id = str(results[0]["tool_use_id"])
                results[0]["tool_use_id"] = "toolu_answering_nothing"
                lines[n] = json.dumps(record)
                return "\n".join(lines) + "\n", call_id
    raise AssertionError("no tool result in tool_heavy.jsonl")
