"""API request bodies (Anthropic Messages, OpenAI Chat, OpenAI Responses).

The real bodies are `request.parsed_body` of recorded provider exchanges (see
tests/data/transcripts/README.md). Mutated copies mark the blocks they touch
with an extra `"mark"` member (first key, which the checker ignores), so the
expected line is found in the pretty-printed text independently of the checker.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import ClassVar

import pytest

import metis_check.transcripts as transcripts
from metis_check.transcripts import FORMATS
from metis_check.transcripts import TranscriptFormat
from metis_check.transcripts import TranscriptFormatError
from metis_check.transcripts import check_transcript
from metis_model._invariants import BY_ID
from metis_trace import _errors
from tests._exports import assert_all_lists_the_public_names

REPO = Path(__file__).resolve().parents[2]
BODIES = REPO / "tests" / "data" / "transcripts" / "provider-requests"
CASSETTES = REPO.parent / "shared" / "corpora" / "provider-streams"

Body = dict[str, Any]
Found = set[tuple[str, int | None]]

REAL: dict[str, TranscriptFormat] = {
    "anthropic-local-shell.json": "anthropic",
    "anthropic-text-editor.json": "anthropic",
    "openai-chat.json": "openai-chat",
    "openai-responses-phase.json": "openai-responses",
    "openai-responses.json": "openai-responses",
}


def load(name: str) -> Body:
    body: Body = json.loads((BODIES / name).read_text())
    return body


def pretty(body: Any) -> list[str]:
    return json.dumps(body, indent=2).splitlines()


def marked(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return {"mark": name, **obj}


def line_of(lines: list[str], name: str) -> int:
    """The 1-based line of the `{` that opens the object marked `name`."""
    (index,) = [i for i, line in enumerate(lines) if f'"mark": "{name}"' in line]
    assert lines[index - 1].rstrip().endswith("{")
    return index  # the 0-based index of the mark is the 1-based line of its `{`


def found(lines: list[str], fmt: TranscriptFormat) -> Found:
    report = check_transcript(lines, fmt, "mutated")
    return {(v.invariant, v.line) for v in report.violations}


# -- per-format surgery on real bodies ---------------------------------------------


class Anthropic:
    fmt: TranscriptFormat = "anthropic"

    def __init__(self, body: Body) -> None:
        self.body = copy.deepcopy(body)
        self.messages: list[dict[str, Any]] = self.body["messages"]
        self.a, self.block = next(
            (i, j)
            for i, m in enumerate(self.messages)
            for j, b in enumerate(m["content"])
            if isinstance(b, dict) and b.get("type") == "tool_use"
        )
        self.call = self.messages[self.a]["content"][self.block]
        self.call_id: str = self.call["id"]
        self.messages[self.a]["content"][self.block] = marked(self.call, "call")
        self.r, self.rblock = next(
            (i, j)
            for i, m in enumerate(self.messages)
            if i > self.a and isinstance(m["content"], list)
            for j, b in enumerate(m["content"])
            if b.get("type") == "tool_result" and b.get("tool_use_id") == self.call_id
        )

    def _results(self) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = self.messages[self.r]["content"]
        return content

    def remove_result(self) -> None:
        del self._results()[self.rblock]
        if not self._results():
            self._results().append({"type": "text", "text": "(lost)"})

    def duplicate_result(self) -> None:
        twin = marked(self._results()[self.rblock], "copy")
        self._results().insert(self.rblock + 1, twin)

    def duplicate_call(self) -> None:
        content = self.messages[self.a]["content"]
        content.insert(self.block + 1, marked(self.call, "copy"))

    def stray_result(self) -> None:
        stray = {"type": "tool_result", "tool_use_id": "toolu_stray", "content": "?"}
        self._results().append(marked(stray, "copy"))

    def cut_after_call(self) -> None:
        del self.messages[self.a + 1 :]
        del self.messages[self.a]["content"][self.block + 1 :]

    def text_before_result(self) -> None:
        self._results()[self.rblock] = marked(self._results()[self.rblock], "copy")
        self._results().insert(self.rblock, {"type": "text", "text": "Here are the results:"})

    def move_result_later(self) -> None:
        moved = marked(self._results()[self.rblock], "copy")
        self.remove_result()
        second = {"type": "tool_use", "id": "toolu_second", "name": "bash", "input": {}}
        answer = {"type": "tool_result", "tool_use_id": "toolu_second", "content": "ok"}
        self.messages.append({"role": "assistant", "content": [second]})
        self.messages.append({"role": "user", "content": [answer, moved]})


class _Entries:
    """Surgery where each result is an entry of its own in the body's list
    `key` (the OpenAI formats); each subclass says what a call and its result
    look like."""

    fmt: TranscriptFormat
    key: str
    id_key: str  # the call's id field
    stray: ClassVar[dict[str, Any]]  # a result no call asked for
    second: ClassVar[list[dict[str, Any]]]  # another call's entries, answered

    def __init__(self, body: Body) -> None:
        self.body = copy.deepcopy(body)
        self.entries: list[dict[str, Any]] = self.body[self.key]
        self.a = next(i for i, e in enumerate(self.entries) if self.holds_call(e))
        self.call = self.mark_call()
        self.call_id: str = self.call[self.id_key]
        self.r = next(i for i, e in enumerate(self.entries) if self.answers(e))

    def holds_call(self, entry: dict[str, Any]) -> bool:
        raise NotImplementedError

    def mark_call(self) -> dict[str, Any]:
        """Marks the first call "call"; returns it as it was."""
        raise NotImplementedError

    def answers(self, entry: dict[str, Any]) -> bool:
        raise NotImplementedError

    def remove_result(self) -> None:
        del self.entries[self.r]

    def duplicate_result(self) -> None:
        self.entries.insert(self.r + 1, marked(self.entries[self.r], "copy"))

    def stray_result(self) -> None:
        self.entries.insert(self.r + 1, marked(self.stray, "copy"))

    def cut_after_call(self) -> None:
        del self.entries[self.a + 1 :]

    def move_result_later(self) -> None:
        moved = marked(self.entries.pop(self.r), "copy")
        self.entries += [*copy.deepcopy(self.second), moved]


class OpenAIChat(_Entries):
    fmt: TranscriptFormat = "openai-chat"
    key = "messages"
    id_key = "id"
    stray: ClassVar[dict[str, Any]] = {"role": "tool", "tool_call_id": "call_stray", "content": "?"}
    second: ClassVar[list[dict[str, Any]]] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_second",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_second", "content": "ok"},
    ]

    def holds_call(self, entry: dict[str, Any]) -> bool:
        return bool(entry.get("tool_calls"))

    def mark_call(self) -> dict[str, Any]:
        calls = self.entries[self.a]["tool_calls"]
        call: dict[str, Any] = calls[0]
        calls[0] = marked(call, "call")
        return call

    def answers(self, entry: dict[str, Any]) -> bool:
        return entry.get("role") == "tool" and entry.get("tool_call_id") == self.call_id

    def duplicate_call(self) -> None:
        self.entries[self.a]["tool_calls"].insert(1, marked(self.call, "copy"))

    def cut_after_call(self) -> None:
        super().cut_after_call()
        del self.entries[self.a]["tool_calls"][1:]


class OpenAIResponses(_Entries):
    fmt: TranscriptFormat = "openai-responses"
    key = "input"
    id_key = "call_id"
    stray: ClassVar[dict[str, Any]] = {
        "type": "function_call_output",
        "call_id": "call_stray",
        "output": "?",
    }
    second: ClassVar[list[dict[str, Any]]] = [
        {"role": "user", "content": "and then?"},
        {"type": "function_call", "call_id": "call_second", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_second", "output": "ok"},
    ]

    def holds_call(self, entry: dict[str, Any]) -> bool:
        return entry.get("type") == "function_call"

    def mark_call(self) -> dict[str, Any]:
        call = self.entries[self.a]
        self.entries[self.a] = marked(call, "call")
        return call

    def answers(self, entry: dict[str, Any]) -> bool:
        return entry.get("type") == "function_call_output" and entry.get("call_id") == self.call_id

    def duplicate_call(self) -> None:
        # Another call item with the same call_id (a copy keeping the item id is OAR-5 too).
        copy_ = {k: v for k, v in self.call.items() if k != "id"}
        self.entries.insert(self.a + 1, marked(copy_, "copy"))


Surgeon = Anthropic | OpenAIChat | OpenAIResponses


def surgeon(name: str) -> Surgeon:
    kinds: dict[str, type[Surgeon]] = {
        "anthropic": Anthropic,
        "openai-chat": OpenAIChat,
        "openai-responses": OpenAIResponses,
    }
    return kinds[REAL[name]](load(name))


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_bodies_pass_pretty_and_compact(name: str) -> None:
    fmt = REAL[name]
    text = (BODIES / name).read_text()
    pretty_report = check_transcript(text.splitlines(), fmt, name)
    compact_report = check_transcript([json.dumps(json.loads(text))], fmt, name)
    for report in (pretty_report, compact_report):
        assert report.ok, [v.one_line() for v in report.violations]
        assert report.checks["CLOSE-2"] == 1  # each holds exactly one answered call
        assert report.checks["CLOSE-4"] == 1
    key = "input" if fmt == "openai-responses" else "messages"
    assert pretty_report.events == len(json.loads(text)[key])


# One edit of a real body, one violation at the line it names: the call whose
# result went, or the copy (a duplicated result or call id, a stray result).
EDITS = [
    ("remove_result", "CLOSE-2", "call"),
    ("duplicate_result", "CLOSE-1", "copy"),
    ("duplicate_call", "CLOSE-7", "copy"),
    ("stray_result", "CLOSE-4", "copy"),
]


@pytest.mark.parametrize(("edit", "invariant", "at"), EDITS, ids=[e[0] for e in EDITS])
@pytest.mark.parametrize("name", sorted(REAL))
def test_one_edit_is_one_violation_at_its_line(
    name: str, edit: str, invariant: str, at: str
) -> None:
    s = surgeon(name)
    getattr(s, edit)()
    lines = pretty(s.body)
    assert found(lines, s.fmt) == {(invariant, line_of(lines, at))}


@pytest.mark.parametrize("name", sorted(REAL))
def test_result_moved_to_a_later_message_is_close_4_and_close_2(name: str) -> None:
    s = surgeon(name)
    s.move_result_later()
    lines = pretty(s.body)
    expected = {("CLOSE-2", line_of(lines, "call")), ("CLOSE-4", line_of(lines, "copy"))}
    assert found(lines, s.fmt) == expected
    report = check_transcript(lines, s.fmt)
    moved = next(v for v in report.violations if v.invariant == "CLOSE-4")
    assert "moved to a later message" in moved.message
    assert report.first is not None and report.first.invariant == "CLOSE-2"  # sorted by line


@pytest.mark.parametrize("name", sorted(REAL))
def test_body_cut_after_a_tool_call_is_close_2(name: str) -> None:
    s = surgeon(name)
    s.cut_after_call()
    lines = pretty(s.body)
    assert found(lines, s.fmt) == {("CLOSE-2", line_of(lines, "call"))}


@pytest.mark.parametrize("name", sorted(n for n, fmt in REAL.items() if fmt == "anthropic"))
def test_text_before_the_result_is_close_2_at_the_result(name: str) -> None:
    s = Anthropic(load(name))
    s.text_before_result()
    lines = pretty(s.body)
    assert found(lines, s.fmt) == {("CLOSE-2", line_of(lines, "copy"))}
    (violation,) = check_transcript(lines, s.fmt).violations
    assert violation.index == s.r
    assert violation.slice == (s.a, s.r)
    assert "must come first" in violation.message


def test_pause_turn_body_with_server_tools_passes() -> None:
    cassette = CASSETTES / "anthropic" / "test_pause_turn_web_search_streaming_vcr.yaml"
    if not cassette.exists():
        pytest.skip("../shared/corpora/provider-streams is not present")
    yaml = pytest.importorskip("yaml")
    body = yaml.safe_load(cassette.read_text())["interactions"][1]["request"]["parsed_body"]
    report = check_transcript(pretty(body), "anthropic")
    # The continuation ends on a server_tool_use the provider has not answered
    # yet: legitimate. Server ids still count toward CLOSE-7.
    assert report.ok
    assert report.checks["CLOSE-7"] == 11
    assert report.checks["CLOSE-2"] == 0


# -- hand-written Anthropic cases --------------------------------------------------


def tool_use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "t", "input": {}}


def tool_result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def one_per_line(messages: Sequence[Any]) -> list[str]:
    """A bare list, one message per line: message i is on line i + 2."""
    body = [json.dumps(m) + ("," if i < len(messages) - 1 else "") for i, m in enumerate(messages)]
    return ["[", *body, "]"]


def test_anthropic_parallel_calls_answered_in_any_order_pass() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("b"), tool_result("a")]},
        {"role": "assistant", "content": [tool_use("c")]},
        {"role": "user", "content": [tool_result("c"), {"type": "text", "text": "more"}]},
        {"role": "assistant", "content": "done"},
    ]
    report = check_transcript(one_per_line(messages), "anthropic")
    assert report.ok
    assert report.checks["CLOSE-2"] == 3
    assert report.transitions == {
        "user": 3,
        "assistant": 3,
        "block:tool_use": 3,
        "block:tool_result": 3,
        "block:text": 1,
    }


def test_anthropic_an_id_reused_in_a_later_turn_is_close_9() -> None:
    # The API rejects it: "`tool_use` ids must be unique" (anthropics/claude-code #21317).
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a")]},
    ]
    report = check_transcript(one_per_line(messages), "anthropic")
    assert [(v.invariant, v.rule, v.line) for v in report.violations] == [("CLOSE-9", "ANT-5", 5)]


def test_anthropic_consecutive_user_messages_count_as_one_turn() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "user", "content": [tool_result("b")]},
    ]
    assert check_transcript(one_per_line(messages), "anthropic").ok


def test_anthropic_text_before_a_result_leaves_its_call_unanswered() -> None:
    # The API's 400: "`tool_use` ids were found without `tool_result` blocks
    # immediately after" (formerly "Did not find 1 `tool_result` block(s) at the
    # beginning of this message").
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("a"), {"type": "text", "text": "x"}]},
    ]
    messages[2]["content"].append(tool_result("b"))  # after the text
    report = check_transcript(one_per_line(messages), "anthropic")
    (violation,) = report.violations
    assert (violation.invariant, violation.index, violation.line) == ("CLOSE-2", 2, 4)
    assert violation.slice == (1, 2)
    assert violation.state == "input message at line 4"
    assert violation.message == (
        "result for call 'b' (at line 3) comes after the 'text' block at line 4 in the "
        "message right after its assistant message, and a provider request follows: "
        "results must come first there, so the call counts as unanswered"
    )
    assert report.checks["CLOSE-2"] == 2  # one check per call, as before


def test_anthropic_any_block_before_a_result_counts_and_is_named() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [tool_use("a")]},
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                    marked(tool_result("a"), "result"),
                ],
            },
        ]
    }
    lines = pretty(body)
    (violation,) = check_transcript(lines, "anthropic").violations
    assert (violation.invariant, violation.line) == ("CLOSE-2", line_of(lines, "result"))
    assert "comes after the 'image' block at line" in violation.message


def test_anthropic_results_first_then_text_passes() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {
            "role": "user",
            "content": [tool_result("b"), tool_result("a"), {"type": "text", "text": "next?"}],
        },
        {"role": "assistant", "content": "done"},
    ]
    assert check_transcript(one_per_line(messages), "anthropic").ok


def test_anthropic_text_message_before_the_results_message_of_one_turn() -> None:
    # Consecutive user messages are one turn: a text-only message first puts
    # text before the results of the combined message.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": "wait, one more thing"},
        {"role": "user", "content": [tool_result("a")]},
    ]
    report = check_transcript(one_per_line(messages), "anthropic")
    (violation,) = report.violations
    assert (violation.invariant, violation.index, violation.line) == ("CLOSE-2", 3, 5)
    assert violation.slice == (1, 2, 3)
    assert "comes after the 'text' block at line 4" in violation.message
    blocks = [{"type": "text", "text": "wait"}]
    messages[2] = {"role": "user", "content": blocks}  # the same as a list of blocks
    assert found(one_per_line(messages), "anthropic") == {("CLOSE-2", 5)}


def test_anthropic_results_split_over_consecutive_messages_results_first_pass() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b"), tool_use("c")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "user", "content": [tool_result("c"), tool_result("b")]},
        {"role": "user", "content": [{"type": "text", "text": "and then"}]},
        {"role": "assistant", "content": "done"},
    ]
    report = check_transcript(one_per_line(messages), "anthropic")
    assert report.ok
    assert report.checks["CLOSE-2"] == 3


def test_anthropic_text_closing_one_message_comes_before_the_next_messages_results() -> None:
    # Each message is results-first on its own, but combined the text of the
    # first precedes the result of the second.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("a"), {"type": "text", "text": "x"}]},
        {"role": "user", "content": [tool_result("b")]},
    ]
    assert found(one_per_line(messages), "anthropic") == {("CLOSE-2", 5)}


def test_anthropic_order_is_checked_only_for_results_that_answer_a_call() -> None:
    # A stray result after text is CLOSE-4 only; so is a result in a user
    # message that answers no tool_use.
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a"), {"type": "text", "text": "x"}]},
        {"role": "user", "content": [tool_result("zz")]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "y"}, tool_result("a")]},
    ]
    assert found(one_per_line(messages), "anthropic") == {("CLOSE-4", 5), ("CLOSE-1", 7)}


def test_anthropic_result_after_an_intervening_assistant_message_is_late() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": "wait"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [tool_result("a")]},
    ]
    assert found(one_per_line(messages), "anthropic") == {("CLOSE-2", 3), ("CLOSE-4", 6)}


def test_anthropic_second_result_in_a_later_message_is_close_1() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [tool_result("a")]},
    ]
    report = check_transcript(one_per_line(messages), "anthropic")
    assert {(v.invariant, v.line) for v in report.violations} == {("CLOSE-1", 6)}
    assert report.violations[0].index == 4
    assert report.violations[0].slice == (1, 2, 4)


def test_anthropic_result_inside_an_assistant_message_is_close_4() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a"), tool_result("a")]},
    ]
    assert found(one_per_line(messages), "anthropic") == {("CLOSE-2", 3), ("CLOSE-4", 3)}


def test_anthropic_body_object_with_system_and_tools() -> None:
    body = {
        "system": "be brief",
        "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [tool_use("a")]},
            {"role": "user", "content": [tool_result("a")]},
        ],
    }
    assert check_transcript(pretty(body), "anthropic").ok
    assert check_transcript(json.dumps(body), "anthropic").ok  # one string is split


def test_anthropic_json_lines_one_message_per_line() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": "no result"},
    ]
    assert found([json.dumps(m) for m in messages], "anthropic") == {("CLOSE-2", 2)}


def test_pretty_printed_lines_point_at_the_block() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}, marked(tool_use("a"), "call")],
            },
            {"role": "user", "content": "nothing"},
        ]
    }
    lines = pretty(body)
    (violation,) = check_transcript(lines, "anthropic").violations
    assert violation.line == line_of(lines, "call")
    assert lines[violation.line - 1].strip() == "{"


# -- hand-written OpenAI Chat cases ------------------------------------------------


def chat_call(*ids: str) -> dict[str, Any]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def chat_tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_chat_parallel_calls_any_order_pass() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        chat_call("a", "b"),
        chat_tool("b"),
        chat_tool("a"),
        chat_call("a"),
        chat_tool("a"),
        {"role": "assistant", "content": "done", "tool_calls": None},
    ]
    assert check_transcript(json.dumps({"messages": messages}), "openai-chat").ok


def test_chat_tool_message_after_a_user_message_is_late() -> None:
    messages = [
        {"role": "user", "content": "go"},
        chat_call("a"),
        {"role": "user", "content": "hm"},
        chat_tool("a"),
    ]
    assert found(one_per_line(messages), "openai-chat") == {("CLOSE-2", 3), ("CLOSE-4", 5)}


def test_chat_system_message_between_call_and_tool_breaks_the_run() -> None:
    messages = [
        {"role": "user", "content": "go"},
        chat_call("a"),
        {"role": "system", "content": "x"},
        chat_tool("a"),
    ]
    assert found(one_per_line(messages), "openai-chat") == {("CLOSE-2", 3), ("CLOSE-4", 5)}


# -- hand-written OpenAI Responses cases -------------------------------------------


def fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def fco(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def test_responses_interleaved_and_parallel_calls_pass() -> None:
    items = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "summary": []},
        fc("a"),
        fc("b"),
        fco("b"),
        fco("a"),
        fc("c"),
        fco("c"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},  # server-side
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
    ]
    report = check_transcript(one_per_line(items), "openai-responses")
    assert report.ok
    assert report.checks["CLOSE-2"] == 3


def test_responses_input_between_call_and_output_is_allowed() -> None:
    items = [
        {"role": "user", "content": "go"},
        fc("a"),
        {"role": "developer", "content": "note"},
        fco("a"),
    ]
    assert check_transcript(one_per_line(items), "openai-responses").ok


def test_responses_output_after_the_next_model_turn_is_late() -> None:
    items = [
        {"role": "user", "content": "go"},
        fc("a"),
        {"role": "user", "content": "?"},
        {"type": "reasoning", "summary": []},  # the model spoke again: a request went out
        fco("a"),
    ]
    assert found(one_per_line(items), "openai-responses") == {("CLOSE-2", 3), ("CLOSE-4", 6)}


def test_responses_previous_response_id_accepts_stored_calls_once() -> None:
    body = {"previous_response_id": "resp_1", "input": [fco("stored"), fco("stored")]}
    lines = one_per_line(body["input"])
    assert found(lines, "openai-responses") == {("CLOSE-4", 2), ("CLOSE-4", 3)}  # no body key
    report = check_transcript(pretty(body), "openai-responses")
    assert [v.invariant for v in report.violations] == ["CLOSE-1"]


def test_responses_plain_text_input_has_nothing_to_close() -> None:
    report = check_transcript(json.dumps({"input": "hello", "model": "m"}), "openai-responses")
    assert report.ok and report.events == 1  # the text is one user message


def test_responses_duplicate_call_id_in_one_turn_is_close_7() -> None:
    items = [{"role": "user", "content": "go"}, fc("a"), fc("a"), fco("a")]
    assert found(one_per_line(items), "openai-responses") == {("CLOSE-7", 4)}


# -- unreadable input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "lines", "line", "fragment"),
    [
        (
            "anthropic",
            ['{"messages": [', '  {"role": "user", "content": "x"},', "  oops", "]}"],
            3,
            "JSON",
        ),
        ("anthropic", ["", "", "   "], 1, "empty"),
        ("anthropic", ["", "42"], 2, "expected a JSON object or a list"),
        ("anthropic", ["[", '{"role": "tool", "content": "x"}', "]"], 2, "role"),
        ("anthropic", ["[]"], 1, "no Anthropic Messages message"),
        ("anthropic", ['{"model": "m", "messages": []}'], 1, "no Anthropic Messages message"),
        ("anthropic", ["[", '{"role": "user", "content": 7}', "]"], 2, "content"),
        ("anthropic", ['[{"role": "assistant",', ' "content": [{"type": "tool_use"}]}]'], 2, "id"),
        ("openai-chat", ["[", '{"role": "tool", "content": "x"}', "]"], 2, "tool_call_id"),
        ("openai-chat", ["[", '{"role": "robot"}', "]"], 2, "role"),
        ("openai-chat", ['{"messages": {"role": "user"}}'], 1, "must be a list"),
        ("openai-responses", ["[", "[1]", "]"], 2, "JSON object"),
        ("openai-responses", ["[", '{"content": "x"}', "]"], 2, "'type' or a 'role'"),
        ("openai-responses", ["[", '{"type": "function_call_output"}', "]"], 2, "call_id"),
        ("openai-responses", ['{"model": "m"}'], 1, "a request body with 'input'"),
    ],
)
def test_unreadable_input_raises_with_the_line(
    fmt: TranscriptFormat, lines: list[str], line: int, fragment: str
) -> None:
    with pytest.raises(TranscriptFormatError) as caught:
        check_transcript(lines, fmt)
    assert caught.value.line == line
    assert fragment in caught.value.message


def test_unknown_format_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown transcript format"):
        check_transcript(["[]"], "gemini")  # type: ignore[arg-type]


# -- the package surface -----------------------------------------------------------


def test_exports() -> None:
    assert_all_lists_the_public_names(transcripts)
    assert FORMATS == (
        "anthropic", "openai-chat", "openai-responses", "claude-code", "codex", "pydantic-ai",
        "otel", "openai-agents",
    )  # fmt: skip
    assert transcripts.TranscriptFormatError is _errors.TranscriptFormatError
    assert issubclass(TranscriptFormatError, _errors.MetisModelError)
    assert issubclass(TranscriptFormatError, ValueError)
    params = list(inspect.signature(check_transcript).parameters)
    assert params == ["lines", "fmt", "source", "strict"]
    params = list(inspect.signature(transcripts.check_claude_code_tree).parameters)
    assert params == ["main_lines", "subagent_files", "source"]


def test_reports_use_known_invariant_ids_and_count_every_check() -> None:
    for fmt in FORMATS:
        lines = {
            "claude-code": ['{"type": "user", "uuid": "u", "message": {"content": "x"}}'],
            "codex": ['{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}'],
            "pydantic-ai": ['[{"kind": "request", "parts": [{"part_kind": "user-prompt"}]}]'],
            "openai-agents": [
                '[{"type": "input_item", "raw_item": {"role": "user", "content": "x"}}]'
            ],
            "otel": [
                '{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "1", '
                '"endTimeUnixNano": "2", "attributes": [{"key": "gen_ai.operation.name", '
                '"value": {"stringValue": "chat"}}]}]}]}]}'
            ],
        }.get(fmt, ['[{"role": "user", "content": "x"}]'])
        report = check_transcript(lines, fmt, "x")
        assert set(report.checks) <= set(BY_ID)
        assert {"CLOSE-1", "CLOSE-2", "CLOSE-4", "CLOSE-7"} <= set(report.checks)
        assert "CLOSE-3" not in report.checks  # not checked, so not claimed
        assert report.source == "x"
