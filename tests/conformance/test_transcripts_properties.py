"""Generated transcripts in all four formats: valid ones pass, single mutations are named.

One abstract conversation (Anthropic-shaped: alternating user/assistant messages
whose blocks are text, calls and results) is rendered to each format. Every
rendered block records the line it landed on, so a mutation's expected
(invariant, line) pairs come from the renderer, not from the checker.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from itertools import count
from typing import Any

import pytest
from hypothesis import assume
from hypothesis import given
from hypothesis import strategies as st

from metis_check.transcripts import FORMATS as ALL_FORMATS
from metis_check.transcripts import TranscriptFormat
from metis_check.transcripts import check_transcript

# OTel spans hold a whole turn on one line, so a block's line does not name it.
FORMATS = tuple(f for f in ALL_FORMATS if f != "otel")

POOL = ("a", "b", "c", "d")  # per turn; a call's id is its pool letter and its turn
# Formats whose provider rejects a call id reused anywhere in the request (CLOSE-9).
UNIQUE_IDS = ("anthropic", "openai-responses", "claude-code", "codex", "openai-agents")
LOGS = (
    "claude-code",
    "codex",
    "pydantic-ai",
    "openai-agents",
)  # records of a run, not requests: an open end is undecided


@dataclass
class Block:
    kind: str  # "text", "call" or "result"
    id: str = ""
    key: int = 0


@dataclass
class Msg:
    role: str
    blocks: list[Block] = field(default_factory=list)


Conversation = list[Msg]
Expected = set[tuple[str, int]]  # (invariant, block key)


def keyed(conversation: Conversation) -> Conversation:
    keys = count(1)
    for message in conversation:
        for block in message.blocks:
            block.key = next(keys)
    return conversation


@st.composite
def conversations(draw: st.DrawFn, with_calls: bool = False) -> Conversation:
    out = [Msg("user", [Block("text")])]
    turns = draw(st.integers(1, 5))
    for turn in range(turns):
        at_least = 1 if with_calls and turn == 0 else 0
        letters = st.lists(st.sampled_from(POOL), min_size=at_least, max_size=3, unique=True)
        ids = [f"{letter}{turn}" for letter in draw(letters)]
        text = [Block("text")] if draw(st.booleans()) or not ids else []
        out.append(Msg("assistant", text + [Block("call", i) for i in ids]))
        if ids:
            order = draw(st.permutations(ids))
            after = [Block("text")] if draw(st.booleans()) else []
            out.append(Msg("user", [Block("result", i) for i in order] + after))
        elif turn < turns - 1:
            out.append(Msg("user", [Block("text")]))
    if out[-1].role == "user" and draw(st.booleans()):
        out.append(Msg("assistant", [Block("text")]))
    return keyed(out)


# -- renderers: lines, and the line of every block key -----------------------------

Rendered = tuple[list[str], dict[int, int]]


def _joined(rows: list[tuple[str, int | None]], head: str, tail: str) -> Rendered:
    """Rows of JSON text (with the key they locate) inside one bracketed document."""
    lines = [head]
    where: dict[int, int] = {}
    for text, key in rows:
        lines.append(text)
        if key is not None:
            where[key] = len(lines)
    lines.append(tail)
    return lines, where


def _with_commas(items: list[str]) -> list[str]:
    return [item + ("," if i < len(items) - 1 else "") for i, item in enumerate(items)]


def render_anthropic(conversation: Conversation) -> Rendered:
    rows: list[tuple[str, int | None]] = []
    for m, message in enumerate(conversation):
        rows.append((f'{{"role": "{message.role}", "content": [', None))
        blocks: list[dict[str, Any]] = []
        for block in message.blocks:
            if block.kind == "text":
                blocks.append({"type": "text", "text": "t"})
            elif block.kind == "call":
                blocks.append(
                    {"type": "tool_use", "id": f"toolu_{block.id}", "name": "t", "input": {}}
                )
            else:
                blocks.append(
                    {"type": "tool_result", "tool_use_id": f"toolu_{block.id}", "content": "r"}
                )
        texts = _with_commas([json.dumps(b) for b in blocks])
        rows += [(t, b.key) for t, b in zip(texts, message.blocks, strict=True)]
        rows.append(("]}" + ("," if m < len(conversation) - 1 else ""), None))
    return _joined(rows, '{"model": "m", "messages": [', "]}")


def _flat(items: Sequence[tuple[dict[str, Any], int | None]]) -> list[tuple[str, int | None]]:
    texts = _with_commas([json.dumps(item) for item, _ in items])
    return [(t, key) for t, (_, key) in zip(texts, items, strict=True)]


def render_chat(conversation: Conversation) -> Rendered:
    rows: list[tuple[str, int | None]] = []
    messages: list[tuple[list[tuple[str, int | None]], bool]] = []  # rows, needs comma
    for message in conversation:
        if message.role == "assistant":
            calls = [b for b in message.blocks if b.kind == "call"]
            head: dict[str, Any] = {"role": "assistant", "content": "t"}
            if not calls:
                messages.append(([(json.dumps(head), None)], True))
                continue
            opening = json.dumps(head)[:-1] + ', "tool_calls": ['
            entries = [
                (
                    {
                        "id": f"call_{b.id}",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    },
                    b.key,
                )
                for b in calls
            ]
            messages.append(([(opening, None), *_flat(entries), ("]}", None)], True))
            continue
        pending_text = False
        for block in message.blocks:  # results become tool messages, in block order
            if block.kind == "text":
                pending_text = True
                continue
            if pending_text:
                messages.append(([(json.dumps({"role": "user", "content": "t"}), None)], True))
                pending_text = False
            tool = {"role": "tool", "tool_call_id": f"call_{block.id}", "content": "r"}
            messages.append(([(json.dumps(tool), block.key)], True))
        if pending_text:
            messages.append(([(json.dumps({"role": "user", "content": "t"}), None)], True))
    for i, (message_rows, _) in enumerate(messages):
        text, key = message_rows[-1]
        message_rows[-1] = (text + ("," if i < len(messages) - 1 else ""), key)
        rows += message_rows
    return _joined(rows, "[", "]")


def _responses_items(conversation: Conversation) -> list[tuple[dict[str, Any], int | None]]:
    items: list[tuple[dict[str, Any], int | None]] = []
    for message in conversation:
        for block in message.blocks:
            if block.kind == "text" and message.role == "user":
                items.append(({"role": "user", "content": "t"}, None))
            elif block.kind == "text":
                text = [{"type": "output_text", "text": "t"}]
                items.append(({"type": "message", "role": "assistant", "content": text}, None))
            elif block.kind == "call":
                call = {
                    "type": "function_call",
                    "call_id": f"call_{block.id}",
                    "name": "f",
                    "arguments": "{}",
                }
                items.append((call, block.key))
            else:
                output = {
                    "type": "function_call_output",
                    "call_id": f"call_{block.id}",
                    "output": "r",
                }
                items.append((output, block.key))
    return items


def render_responses(conversation: Conversation) -> Rendered:
    return _joined(_flat(_responses_items(conversation)), '{"model": "m", "input": [', "]}")


def render_agents(conversation: Conversation) -> Rendered:
    """OpenAI Agents SDK run items, one per line, each wrapping its Responses item."""
    kinds = {"function_call": "tool_call_item", "function_call_output": "tool_call_output_item"}
    lines, where = [], {}
    for item, key in _responses_items(conversation):
        kind = kinds.get(str(item.get("type")), "message_output_item")
        if item.get("role") == "user":
            kind = "input_item"
        lines.append(json.dumps({"type": kind, "raw_item": item, "agent": {"name": "a"}}))
        if key is not None:
            where[key] = len(lines)
    return lines, where


def render_codex(conversation: Conversation) -> Rendered:
    """A Codex rollout: a session_meta line, then one response_item line per item."""
    meta = {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s"}}
    lines, where = [json.dumps(meta)], {}
    for item, key in _responses_items(conversation):
        line = {"timestamp": "2025-01-01T00:00:01Z", "type": "response_item", "payload": item}
        lines.append(json.dumps(line))
        if key is not None:
            where[key] = len(lines)
    return lines, where


def render_claude_code(conversation: Conversation) -> Rendered:
    """One line per block, threaded like real sessions: parallel results hang from their call."""
    lines = [json.dumps({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})]
    where: dict[int, int] = {}
    uuids = count()
    last: str | None = None
    calls_of_previous: dict[str, str] = {}

    def write(record: dict[str, Any], parent: str | None, key: int | None = None) -> str:
        uuid = f"u{next(uuids)}"
        lines.append(
            json.dumps({"uuid": uuid, "parentUuid": parent, "isSidechain": False, **record})
        )
        if key is not None:
            where[key] = len(lines)
        return uuid

    for m, message in enumerate(conversation):
        if message.role == "assistant":
            calls: dict[str, str] = {}
            for block in message.blocks:
                if block.kind == "text":
                    content: dict[str, Any] = {"type": "text", "text": "t"}
                else:
                    content = {
                        "type": "tool_use",
                        "id": f"toolu_{block.id}",
                        "name": "t",
                        "input": {},
                    }
                body = {"id": f"msg_{m}", "role": "assistant", "content": [content]}
                last = write({"type": "assistant", "message": body}, last, block.key)
                if block.kind == "call":
                    calls.setdefault(block.id, last)
                    last = write({"type": "progress", "data": {"type": "hook_progress"}}, last)
            calls_of_previous = calls
            continue
        for block in message.blocks:
            if block.kind == "text":
                body = {"role": "user", "content": "t"}
                last = write({"type": "user", "message": body}, last)
                continue
            result = {"type": "tool_result", "tool_use_id": f"toolu_{block.id}", "content": "r"}
            parent = calls_of_previous.get(block.id, last)
            body = {"role": "user", "content": [result]}
            last = write({"type": "user", "message": body}, parent, block.key)
        calls_of_previous = {}
    return lines, where


def render_pydantic_ai(conversation: Conversation) -> Rendered:
    """ModelMessagesTypeAdapter JSON: one part per line."""
    rows: list[tuple[str, int | None]] = []
    for m, message in enumerate(conversation):
        kind = "response" if message.role == "assistant" else "request"
        rows.append((f'{{"kind": "{kind}", "parts": [', None))
        parts: list[dict[str, Any]] = []
        for block in message.blocks:
            if block.kind == "text":
                parts.append(
                    {"part_kind": "text" if kind == "response" else "user-prompt", "content": "t"}
                )
            elif block.kind == "call":
                parts.append(
                    {
                        "part_kind": "tool-call",
                        "tool_name": "f",
                        "args": {},
                        "tool_call_id": block.id,
                    }
                )
            else:
                parts.append(
                    {
                        "part_kind": "tool-return",
                        "tool_name": "f",
                        "content": "r",
                        "tool_call_id": block.id,
                    }
                )
        texts = _with_commas([json.dumps(p) for p in parts])
        rows += [(t, b.key) for t, b in zip(texts, message.blocks, strict=True)]
        rows.append(("]}" + ("," if m < len(conversation) - 1 else ""), None))
    return _joined(rows, "[", "]")


RENDER: dict[str, Callable[[Conversation], Rendered]] = {
    "anthropic": render_anthropic,
    "openai-chat": render_chat,
    "openai-responses": render_responses,
    "claude-code": render_claude_code,
    "codex": render_codex,
    "pydantic-ai": render_pydantic_ai,
    "openai-agents": render_agents,
}


def violations_by_key(conversation: Conversation, fmt: TranscriptFormat) -> Expected:
    lines, where = RENDER[fmt](conversation)
    key_of_line = {line: key for key, line in where.items()}
    report = check_transcript(lines, fmt, fmt)
    found = set()
    for v in report.violations:
        assert v.line in key_of_line, (v.one_line(), lines)
        found.add((v.invariant, key_of_line[v.line]))
    for u in report.undecided:
        assert u.line in key_of_line, (u.one_line(), lines)
        found.add((u.status, key_of_line[u.line]))
    return found


# -- valid transcripts pass ----------------------------------------------------------


@given(conversations())
def test_valid_transcripts_pass_in_every_format(conversation: Conversation) -> None:
    calls = sum(b.kind == "call" for m in conversation for b in m.blocks)
    results = sum(b.kind == "result" for m in conversation for b in m.blocks)
    for fmt in FORMATS:
        lines, _ = RENDER[fmt](conversation)
        report = check_transcript(lines, fmt)
        assert report.ok, (fmt, [v.one_line() for v in report.violations], lines)
        assert report.checks["CLOSE-2"] == calls, fmt
        assert report.checks["CLOSE-7"] == calls, fmt
        assert report.checks["CLOSE-4"] == results, fmt


# -- single mutations are named, with the right line -------------------------------


def _fresh_key(conversation: Conversation) -> int:
    return max((b.key for m in conversation for b in m.blocks), default=0) + 1


def _call_answered(conversation: Conversation, m: int, call_id: str) -> Block:
    return next(b for b in conversation[m - 1].blocks if b.kind == "call" and b.id == call_id)


def _blocks(conversation: Conversation, kind: str) -> list[tuple[int, int]]:
    """(message, block) of each block of `kind` ("call" or "result")."""
    return [
        (m, i)
        for m, msg in enumerate(conversation)
        for i, b in enumerate(msg.blocks)
        if b.kind == kind
    ]


def _keep_nonempty(message: Msg) -> None:
    if not message.blocks:
        message.blocks.append(Block("text", key=0))


def _movable(conversation: Conversation) -> list[tuple[int, int]]:
    """Results that can move to the next user message after the next assistant
    message, which must not call the same id (the result would pair with it)."""
    return [
        (m, i)
        for m, i in _blocks(conversation, "result")
        if m + 2 < len(conversation)
        and conversation[m + 2].role == "user"
        and all(b.id != conversation[m].blocks[i].id for b in conversation[m + 1].blocks)
    ]


def _everywhere(expected: Expected) -> dict[str, Expected]:
    return {fmt: expected for fmt in FORMATS}


def _open(keys: set[int], followed: bool) -> dict[str, Expected]:
    """Calls left open: CLOSE-2 in a request, or where a request followed; in a log
    that simply ends there, undecided (`open-at-end`)."""
    return {
        fmt: {("open-at-end" if fmt in LOGS and not followed else "CLOSE-2", k) for k in keys}
        for fmt in FORMATS
    }


def mutate(data: st.DataObject, kind: str) -> tuple[Conversation, dict[str, Expected]]:
    """Apply one mutation of `kind`; return the transcript and what each format must report."""
    conversation = copy.deepcopy(data.draw(conversations(with_calls=True)))
    new = _fresh_key(conversation)

    if kind == "remove":
        m, i = data.draw(st.sampled_from(_blocks(conversation, "result")))
        gone = conversation[m].blocks.pop(i)
        _keep_nonempty(conversation[m])
        followed = any(msg.role == "assistant" for msg in conversation[m + 1 :])
        return conversation, _open({_call_answered(conversation, m, gone.id).key}, followed)

    if kind == "duplicate_result":
        m, i = data.draw(st.sampled_from(_blocks(conversation, "result")))
        conversation[m].blocks.insert(i + 1, Block("result", conversation[m].blocks[i].id, new))
        return conversation, _everywhere({("CLOSE-1", new)})

    if kind == "duplicate_call":
        m, i = data.draw(st.sampled_from(_blocks(conversation, "call")))
        conversation[m].blocks.insert(i + 1, Block("call", conversation[m].blocks[i].id, new))
        return conversation, _everywhere({("CLOSE-7", new)})

    if kind == "reuse":  # a later turn's call (and its result) takes an earlier call's id
        calls = _blocks(conversation, "call")
        assume(len({m for m, _ in calls}) > 1)
        m, i = data.draw(st.sampled_from(calls))
        later = [(n, j) for n, j in calls if n > m]
        assume(later)
        n, j = data.draw(st.sampled_from(later))
        old, taken = conversation[n].blocks[j].id, conversation[m].blocks[i].id
        assume(all(b.id != taken for b in conversation[n].blocks))
        for message in conversation[n:]:
            for block in message.blocks:
                if block.id == old:
                    block.id = taken
        key = conversation[n].blocks[j].key
        return conversation, {
            fmt: {("CLOSE-9", key)} if fmt in UNIQUE_IDS else set() for fmt in FORMATS
        }

    if kind == "cut":  # the transcript ends inside an assistant message, after a call
        m, i = data.draw(st.sampled_from(_blocks(conversation, "call")))
        del conversation[m + 1 :]
        del conversation[m].blocks[i + 1 :]
        return conversation, _open(
            {b.key for b in conversation[m].blocks if b.kind == "call"}, False
        )

    if kind == "move":
        movable = _movable(conversation)
        assume(movable)
        m, i = data.draw(st.sampled_from(movable))
        moved = conversation[m].blocks.pop(i)
        _keep_nonempty(conversation[m])
        call = _call_answered(conversation, m, moved.id)
        conversation[m + 2].blocks.append(moved)
        return conversation, _everywhere({("CLOSE-2", call.key), ("CLOSE-4", moved.key)})

    assert kind == "stray"
    users = [m for m, msg in enumerate(conversation) if msg.role == "user"]
    m = data.draw(st.sampled_from(users))
    conversation[m].blocks.append(Block("result", "zz", new))
    return conversation, _everywhere({("CLOSE-4", new)})


MUTATIONS = ("remove", "duplicate_result", "duplicate_call", "reuse", "stray", "move", "cut")


@pytest.mark.parametrize("kind", MUTATIONS)
@given(data=st.data())
def test_single_mutations_are_named_with_their_line_in_every_format(
    kind: str, data: st.DataObject
) -> None:
    conversation, expected = mutate(data, kind)
    for fmt in FORMATS:
        assert violations_by_key(conversation, fmt) == expected[fmt], fmt
