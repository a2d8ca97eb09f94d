"""Codex CLI rollouts: the checked-in rollout passes, mutations are named, partial files are undecided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from metis_check.transcripts import TranscriptFormatError
from metis_check.transcripts import check_transcript
from metis_check.transcripts import detect_format

ROLLOUT = next(
    (Path(__file__).resolve().parents[1] / "data" / "transcripts" / "codex").glob("*.jsonl")
)
LINES = ROLLOUT.read_text().splitlines()


def records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LINES]


def dump(rows: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r) for r in rows]


def payload_index(rows: list[dict[str, Any]], kind: str, call_id: str) -> int:
    return next(
        i for i, r in enumerate(rows)
        if r["type"] == "response_item" and r["payload"]["type"] == kind and r["payload"].get("call_id") == call_id
    )  # fmt: skip


def found(rows: list[dict[str, Any]]) -> set[tuple[str, str, int | None]]:
    report = check_transcript(dump(rows), "codex")
    return {(v.invariant, v.rule, v.line) for v in report.violations} | {
        (u.status, u.invariant, u.line) for u in report.undecided
    }


def test_the_rollout_conforms_and_every_call_type_was_checked() -> None:
    report = check_transcript(LINES, "codex")
    assert report.ok and report.format == "codex"
    assert report.checks["CLOSE-2"] == 3 and report.checks["CLOSE-9"] == 3
    for kind in ("function_call", "custom_tool_call", "local_shell_call"):
        assert report.transitions[kind] == 1
    assert detect_format(LINES)[0] == "codex"


def test_a_removed_output_before_the_next_turn_is_close_2() -> None:
    rows = records()
    call = payload_index(rows, "custom_tool_call", "call_P2")
    del rows[payload_index(rows, "custom_tool_call_output", "call_P2")]
    assert found(rows) == {("CLOSE-2", "OAR-1", call + 1)}


def test_a_rollout_cut_after_a_call_is_open_at_end() -> None:
    rows = records()
    call = payload_index(rows, "local_shell_call", "call_L3")
    assert found(rows[: call + 1]) == {("open-at-end", "CLOSE-2", call + 1)}


def test_a_call_id_reused_in_a_later_turn_is_close_9() -> None:
    rows = records()
    for row in rows:
        if row["type"] == "response_item" and row["payload"].get("call_id") == "call_L3":
            row["payload"]["call_id"] = "call_Q1"
    assert found(rows) == {
        ("CLOSE-9", "OAR-4", payload_index(rows, "local_shell_call", "call_Q1") + 1)
    }


def test_an_output_after_a_compaction_of_its_call_is_close_6() -> None:
    rows = records()
    output = payload_index(rows, "function_call_output", "call_Q1")
    compacted = {"timestamp": "t", "type": "compacted", "payload": {"message": "summary"}}
    rows.insert(output, compacted)
    call = payload_index(rows, "function_call", "call_Q1")
    # The call was open when the history was replaced, and its output came after.
    assert found(rows) == {("CLOSE-6", "", call + 1), ("CLOSE-6", "", output + 2)}


def test_replacement_history_starts_the_new_thread() -> None:
    rows = records()
    call = payload_index(rows, "custom_tool_call", "call_P2")
    history = [rows[call]["payload"]]
    rows.insert(
        call + 1,
        {
            "timestamp": "t",
            "type": "compacted",
            "payload": {"message": "s", "replacement_history": history},
        },
    )
    assert not check_transcript(dump(rows), "codex").violations  # the call came along
    rows[call + 1]["payload"]["replacement_history"] = []  # dropped: its output is now cut off
    assert [v.invariant for v in check_transcript(dump(rows), "codex").violations] == ["CLOSE-6"]


def test_a_rollout_without_session_meta_is_a_slice() -> None:
    rows = records()
    start = payload_index(rows, "function_call_output", "call_Q1")
    report = check_transcript(dump(rows[start:]), "codex")
    assert [(u.status, u.line) for u in report.undecided] == [("outside-slice", 1)]
    assert not report.violations


def test_older_rollouts_of_bare_items_are_read() -> None:
    rows = records()
    old = [{"id": "s", "timestamp": "t", "instructions": None}, {"record_type": "state"}]
    old += [r["payload"] for r in rows if r["type"] == "response_item"]
    assert check_transcript(dump(old), "codex").ok


def test_a_claude_code_session_is_not_a_rollout() -> None:
    session = (
        Path(__file__).resolve().parents[1] / "data" / "transcripts" / "claude-code" / "short.jsonl"
    )
    with pytest.raises(TranscriptFormatError, match="not a Codex rollout"):
        check_transcript(session.read_text(), "codex")
