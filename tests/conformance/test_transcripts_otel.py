"""OpenTelemetry GenAI spans: a real instrumented run passes; a dropped result is named."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from metis_check.transcripts import check_transcript
from metis_check.transcripts import detect_format

DATA = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "transcripts"
    / "otel"
    / "pydantic-ai-weather.jsonl"
)
TRACES = json.loads(DATA.read_text())


def spans(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in data["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def attribute(span: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((a for a in span["attributes"] if a["key"] == key), None)


def test_the_real_spans_conform_and_are_detected() -> None:
    report = check_transcript(DATA.read_text(), "otel")
    assert report.ok and report.format == "otel"
    assert report.checks["CLOSE-2"] == 2  # both parallel calls answered in the next chat span
    assert report.transitions == {"span:chat": 2, "span:execute_tool": 2, "span:invoke_agent": 1}
    assert detect_format(DATA.read_text())[0] == "otel"


def test_a_result_missing_from_the_next_request_is_otel_1() -> None:
    data = copy.deepcopy(TRACES)
    second = [s for s in spans(data) if s["name"].startswith("chat")][1]
    messages = attribute(second, "gen_ai.input.messages")
    assert messages is not None
    history = json.loads(messages["value"]["stringValue"])
    for message in history:
        message["parts"] = [
            p
            for p in message["parts"]
            if p.get("id") != "call_t1" or p["type"] != "tool_call_response"
        ]
    messages["value"]["stringValue"] = json.dumps(history)
    report = check_transcript(json.dumps(data), "otel")
    assert [(v.invariant, v.rule) for v in report.violations] == [("CLOSE-2", "OTEL-1")]
    assert "call_t1" in report.violations[0].message


def test_spans_without_recorded_messages_pair_nothing_and_say_so() -> None:
    data = copy.deepcopy(TRACES)
    for span in spans(data):
        span["attributes"] = [a for a in span["attributes"] if not a["key"].endswith(".messages")]
    report = check_transcript(json.dumps(data), "otel")
    assert report.ok and report.checks["CLOSE-2"] == 0
    assert any("without gen_ai.output.messages" in n.message for n in report.notes)


def test_a_file_of_other_spans_is_refused() -> None:
    import pytest

    from metis_check.transcripts import TranscriptFormatError

    plain = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "GET /", "attributes": []}]}]}]}
    with pytest.raises(TranscriptFormatError, match="no GenAI span"):
        check_transcript(json.dumps(plain), "otel")
