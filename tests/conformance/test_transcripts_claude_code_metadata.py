"""Claude Code's bookkeeping lines (issue 24): a file of `summary` lines
alone, which Claude Code writes, is a session without turns (conforms, with
a note), and the genuine metadata types (`ai-title`, `mode`, `last-prompt`,
`pr-link`, `file-history-delta`, ...) are known and skipped, while a really
unknown type is still warned about and a file of nothing else is refused.
The types' provenance: metis_model/transcripts/_claude_code.py."""

from __future__ import annotations

import json

import pytest

from metis_check.transcripts import check_transcript
from metis_check.transcripts._claude_code import METADATA_TYPES
from metis_check.transcripts._detect import detect_format
from metis_trace import TranscriptFormatError

SESSION = "5d9a3e0f-6c0e-4f59-9f0e-3c7a1b2d4e5f"


def _lines(*records: dict[str, object]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _turns() -> list[dict[str, object]]:
    call = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "Bash", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": ""}
    return [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": SESSION,
            "message": {"role": "user", "content": "list the files"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": SESSION,
            "message": {"id": "msg_1", "role": "assistant", "content": [call]},
        },
        {
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "sessionId": SESSION,
            "message": {"role": "user", "content": [result]},
        },
    ]


def test_a_summary_only_file_is_a_session_without_turns() -> None:
    text = _lines({"type": "summary", "summary": "Fix the build", "leafUuid": "a1"})
    assert detect_format(text)[0] == "claude-code"
    report = check_transcript(text, "claude-code", "s.jsonl")
    assert report.ok and not report.violations and not report.undecided
    assert any("no turns" in n.message for n in report.notes)


@pytest.mark.parametrize("kind", sorted(METADATA_TYPES))
def test_a_metadata_line_is_known_and_not_warned_about(kind: str) -> None:
    text = _lines(*_turns(), {"type": kind, "sessionId": SESSION})
    report = check_transcript(text, "claude-code", "s.jsonl")
    assert report.ok
    assert not any("not a Claude Code type" in n.message for n in report.notes), report.notes


def test_a_really_unknown_type_is_still_warned_about() -> None:
    text = _lines(*_turns(), {"type": "future-sidecar-probe", "sessionId": SESSION})
    report = check_transcript(text, "claude-code", "s.jsonl")
    assert any(
        "'future-sidecar-probe', not a Claude Code type" in n.message for n in report.notes
    ), report.notes


def test_a_file_of_unknown_types_alone_is_refused() -> None:
    text = _lines({"type": "ai-title", "aiTitle": "x"}, {"type": "bogus", "sessionId": SESSION})
    with pytest.raises(TranscriptFormatError, match="not a Claude Code session"):
        check_transcript(text, "claude-code", "s.jsonl")
    with pytest.raises(TranscriptFormatError, match="not a Claude Code session"):
        check_transcript("\n", "claude-code", "s.jsonl")
