"""OpenAI Agents SDK run items: the SDK's own run state passes; mutations are named."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from metis_check.transcripts import check_transcript
from metis_check.transcripts import detect_format

STATE = json.loads(
    (
        Path(__file__).resolve().parents[1]
        / "data"
        / "transcripts"
        / "openai-agents"
        / "handoff-weather.json"
    ).read_text()
)


def check(state: dict[str, Any]) -> Any:
    return check_transcript(json.dumps(state, indent=1), "openai-agents")


def test_the_sdk_run_state_conforms_and_is_detected() -> None:
    report = check(STATE)
    assert report.ok and report.checks["CLOSE-2"] == 3  # the handoff and two tool calls
    assert report.transitions["item:handoff_output_item"] == 1
    assert detect_format(json.dumps(STATE))[0] == "openai-agents"


def test_a_removed_tool_output_is_oas_1() -> None:
    state = copy.deepcopy(STATE)
    state["generated_items"] = [
        item for item in state["generated_items"]
        if not (item["type"] == "tool_call_output_item" and item["raw_item"]["call_id"] == "call_w2")
    ]  # fmt: skip
    report = check(state)
    assert [(v.invariant, v.rule) for v in report.violations] == [("CLOSE-2", "OAS-1")]
    assert "call_w2" in report.violations[0].message


def test_a_run_interrupted_for_approval_is_undecided() -> None:
    state = copy.deepcopy(STATE)
    outputs = [
        i
        for i, item in enumerate(state["generated_items"])
        if item["type"] == "tool_call_output_item"
    ]
    del state["generated_items"][outputs[0] :]
    report = check(state)
    assert report.verdict == "undetermined" and {u.status for u in report.undecided} == {
        "open-at-end"
    }


def test_a_bare_list_of_run_items_is_read_too() -> None:
    assert check_transcript(json.dumps(STATE["generated_items"]), "openai-agents").ok
