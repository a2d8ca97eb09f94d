"""pydantic-ai message histories: real output of the library passes; mutations are named."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from metis_check.transcripts import check_transcript
from metis_check.transcripts import detect_format

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts" / "pydantic-ai"
HISTORY = json.loads((DATA / "weather-tools.json").read_text())


def lines(history: list[Any]) -> list[str]:
    return json.dumps(history, indent=2).splitlines()


def line_of(text: list[str], call_id: str, kind: str) -> int:
    """The line of the `{` opening the part of `kind` with `call_id` (parts are pretty-printed)."""
    for i, line in enumerate(text):
        if f'"tool_call_id": "{call_id}"' in line:
            start = max(j for j in range(i) if text[j].strip() == "{")
            if any(f'"part_kind": "{kind}"' in t for t in text[start : start + 30]):
                return start + 1
    raise AssertionError(call_id)


def test_the_real_history_conforms_and_is_detected() -> None:
    report = check_transcript(lines(HISTORY), "pydantic-ai")
    assert report.ok and report.events == 8
    assert report.checks["CLOSE-2"] == 4 and report.transitions["part:tool-return"] == 4
    assert detect_format(lines(HISTORY))[0] == "pydantic-ai"


def test_a_removed_tool_return_is_pai_1_at_the_call() -> None:
    history = copy.deepcopy(HISTORY)
    history[2]["parts"] = [p for p in history[2]["parts"] if p.get("tool_call_id") != "call_t1"]
    text = lines(history)
    report = check_transcript(text, "pydantic-ai")
    assert [(v.invariant, v.rule, v.line) for v in report.violations] == [
        ("CLOSE-2", "PAI-1", line_of(text, "call_t1", "tool-call"))
    ]


def test_a_history_ending_on_tool_calls_is_undecided() -> None:
    report = check_transcript(lines(HISTORY[:2]), "pydantic-ai")
    assert report.verdict == "undetermined" and len(report.undecided) == 2


def test_the_installed_pydantic_ai_still_writes_what_the_reader_reads(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_ai")
    done = subprocess.run(
        [sys.executable, str(DATA / "generate.py")], capture_output=True, text=True, check=True
    )
    report = check_transcript(done.stdout, "pydantic-ai")
    assert report.ok and report.checks["CLOSE-2"] == 4, [v.one_line() for v in report.violations]
