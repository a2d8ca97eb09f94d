"""Readers for provider request bodies: Anthropic Messages, OpenAI Chat, OpenAI Responses.

An input holds one or more JSON documents (compact, pretty-printed, or one per
line), each of them:

* a request body (`messages` / `input`): a request of its own, as it was sent
  (every call in it must already be answered; several bodies are several
  requests, each checked on its own path);
* a message or item (or a list of them): JSON Lines of one conversation, which
  is itself the next request;
* a response object (Anthropic `type: "message"`, Chat `object:
  "chat.completion"`, Responses `object: "response"`): the reply to what came
  before it, appended to that conversation. A reply's calls were not sent
  anywhere yet; open where the input ends, they are undecided (`open-at-end`).

So several responses concatenated in one file are all read. Two documents on
one line are read as two records, with a warning.

Where each format wants its results:

* anthropic: in the very next message (consecutive same-role messages count as
  one turn, as the API combines them), and results first (ANT-1, ANT-2). Server
  tools (`server_tool_use`, `mcp_tool_use`) and their result blocks pair with
  each other within the assistant turns (ANT-7); a `compaction` block drops
  what came before it (ANT-8). Ids are unique across the request and of the
  API's alphabet (ANT-5, ANT-6).
* openai-chat: by `role: "tool"` messages in the run of tool messages right
  after the assistant message; any other message ends that run. `n` > 1
  choices of one response are alternatives (sibling branches).
* openai-responses: by an output item after the call and before the next model
  turn (`_blocks.responses_role` says which item is which). Model items form a
  turn; a model item after any input item starts the next one. Input items may
  sit between a call and its output. With `previous_response_id` or
  `conversation`, and after an `item_reference`, outputs answer stored calls
  that cannot be seen: each is accepted once.

Line numbers are exact: the scanner records where each message, content block
and tool call starts. `Violation.index` is the 0-based message (or item) index.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import attrs

from metis_trace import TranscriptFormatError

from .._report import Note
from .._report import Violation
from ._blocks import ANTHROPIC_ID
from ._blocks import ANTHROPIC_SERVER_ID
from ._blocks import anthropic_role
from ._blocks import responses_role
from ._locate import LEAF
from ._locate import Located
from ._locate import Want
from ._tree import Block
from ._tree import NodeKind
from ._tree import Occ
from ._tree import Parsed
from ._tree import Tree

_MESSAGE = Want(keys={"content": Want(each=LEAF), "tool_calls": Want(each=LEAF)})
_CHOICE = Want(keys={"message": _MESSAGE})
# The top level is a body, a bare list, a response, or (JSON Lines) a record per line.
TOP = Want(
    each=_MESSAGE,
    keys={
        "messages": Want(each=_MESSAGE),
        "input": Want(each=_MESSAGE),
        "output": Want(each=_MESSAGE),
        "choices": Want(each=_CHOICE),
        **_MESSAGE.keys,
    },
)

Reader = Callable[[list[Located], str], Parsed]


@attrs.frozen
class _Segment:
    records: list[Located]
    body: dict[str, Any]  # the request body, when the segment is one
    sent: bool  # part of a request (a body, or message lines), not a reply
    new_request: bool  # a body: a request of its own, on its own path


def _fail(line: int, message: str, source: str) -> TranscriptFormatError:
    return TranscriptFormatError(line, message, source)


def _segments(
    docs: list[Located],
    key: str,
    reply: Callable[[Located], list[Located] | None],
    source: str,
) -> Iterator[_Segment]:
    for doc in docs:
        value = doc.value
        if isinstance(value, list):
            yield _Segment(
                list(doc.items) or [Located(v, doc.line) for v in value], {}, True, False
            )
            continue
        if not isinstance(value, dict):
            raise _fail(doc.line, f"expected a JSON object or a list, not {value!r:.40}", source)
        if key in value:
            inner = doc.fields[key]
            if key == "input" and isinstance(inner.value, str):
                text = Located({"role": "user", "content": inner.value}, inner.line)
                yield _Segment([text], value, True, True)  # a plain-text input: one message
                continue
            if not isinstance(inner.value, list):
                raise _fail(inner.line, f"{key!r} must be a list", source)
            yield _Segment(list(inner.items), value, True, True)
            continue
        records = reply(doc)
        if records is not None:
            yield _Segment(records, {}, False, False)
        elif "role" in value or "type" in value:
            yield _Segment([doc], {}, True, False)  # a single message or item
        else:
            raise _fail(
                doc.line, f"expected a request body with {key!r}, a response, or a message", source
            )


def _notes_for_shared_lines(docs: list[Located]) -> list[Note]:
    notes = []
    for before, doc in itertools.pairwise(docs):
        if doc.line == before.line:
            notes.append(Note(doc.line, "holds more than one JSON value: read as separate records"))
    return notes


def mark_open_ends(parsed: Parsed) -> Parsed:
    """A reply nothing was sent after may still be answered: open there is undecided."""
    nodes = parsed.tree.nodes
    has_child = {n.parent for n in nodes}
    for number, node in enumerate(nodes):
        if number not in has_child and not node.sent:
            parsed.ends.setdefault(number, "open-at-end")
    return parsed


def _object(record: Located, what: str, source: str) -> dict[str, Any]:
    if not isinstance(record.value, dict):
        raise _fail(record.line, f"{what} must be a JSON object", source)
    return record.value


def _text_id(value: Any, line: int, what: str, source: str) -> str:
    if not isinstance(value, str):
        raise _fail(line, f"{what} must be a string", source)
    return value


def id_rule_violation(occ: Occ, kind: str, pattern: str, rule: str) -> Violation:
    return Violation(
        "CLOSE-9",
        occ.index,
        f"{kind} id {occ.id!r} does not match {pattern}: the provider rejects it",
        occ.line,
        "",
        (occ.index,),
        rule,
    )


class _Builder:
    """Turns and their parents, across the segments of one input."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.current: int | None = None  # the node being filled
        self.side: NodeKind | None = None
        # Per input node, its first item that is not a result (Responses: a
        # result after it is out of place for strict providers, OAR-6).
        self.first_other: dict[int, Block] = {}

    def start(self, segment: _Segment) -> None:
        if segment.new_request:
            self.current, self.side = None, None

    def node(self, side: NodeKind, line: int, index: int, sent: bool) -> int:
        if side != self.side or self.current is None:
            self.current = self.tree.add(side, self.current, line, index, sent=sent)
            self.side = side
        return self.current

    def opaque(self, index: int) -> None:
        self.current = self.tree.add("opaque", self.current, None, index)
        self.side = "opaque"


def _anthropic_reply(doc: Located) -> list[Located] | None:
    value = doc.value
    if value.get("type") == "message" and value.get("role") == "assistant":
        return [doc]  # a Messages API response object
    return None


_ANTHROPIC_ROLES = ("user", "assistant", "system")


def read_anthropic(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    tree, kinds = parsed.tree, parsed.kinds
    build = _Builder(tree)
    index = -1
    first_other: Block | None = None  # the turn's first block that is not a tool_result
    for segment in _segments(docs, "messages", _anthropic_reply, source):
        build.start(segment)
        for record in segment.records:
            index += 1
            message = _object(record, "a message", source)
            role = message.get("role")
            if role not in _ANTHROPIC_ROLES:
                raise _fail(
                    record.line, f"message role must be 'user' or 'assistant', not {role!r}", source
                )
            kinds[role] += 1
            parsed.records += 1
            content = message.get("content")
            if not isinstance(content, str | list):
                raise _fail(record.line, "message content must be a string or a list", source)
            side: NodeKind = "model" if role == "assistant" else "input"
            before = build.current
            number = build.node(side, record.line, index, segment.sent)
            if number != before:
                first_other = None
            if isinstance(content, str) and first_other is None and side == "input":
                first_other = Block("text", record.line, index)  # a string is one text block
            for block, line in record.parts("content"):
                if not isinstance(block, dict):
                    raise _fail(line, "a content block must be a JSON object", source)
                kind = block.get("type")
                role_of = anthropic_role(kind)
                kinds[f"block:{kind}"] += 1
                if role_of is None:
                    parsed.notes.append(
                        Note(line, f"content block type {kind!r} is not an Anthropic type")
                    )
                if side == "input":
                    if role_of == "result":
                        result_id = _text_id(block.get("tool_use_id"), line, "tool_use_id", source)
                        tree.nodes[number].results.append(
                            Occ(result_id, line, index, after=first_other)
                        )
                    elif first_other is None:
                        first_other = Block(
                            kind if isinstance(kind, str) else "untyped", line, index
                        )
                    continue
                node = tree.nodes[number]
                if role_of == "call":
                    occ = Occ(_text_id(block.get("id"), line, "tool_use id", source), line, index)
                    node.calls.append(occ)
                    if not ANTHROPIC_ID.fullmatch(occ.id):
                        parsed.violations.append(
                            id_rule_violation(occ, "tool_use", ANTHROPIC_ID.pattern, "ANT-6")
                        )
                elif role_of == "server_call":
                    occ = Occ(_text_id(block.get("id"), line, f"{kind} id", source), line, index)
                    node.server_call(occ)
                    if kind == "server_tool_use" and not ANTHROPIC_SERVER_ID.fullmatch(occ.id):
                        parsed.violations.append(
                            id_rule_violation(occ, kind, ANTHROPIC_SERVER_ID.pattern, "ANT-6")
                        )
                elif role_of == "server_result":
                    result_id = _text_id(
                        block.get("tool_use_id"), line, f"{kind} tool_use_id", source
                    )
                    node.server_result(Occ(result_id, line, index))
                elif role_of == "result":
                    result_id = _text_id(block.get("tool_use_id"), line, "tool_use_id", source)
                    node.results.append(Occ(result_id, line, index))
                elif role_of == "compaction" and block.get("content") is not None:
                    # The API drops every block before a compaction block sent back.
                    parsed.ends[number] = "CLOSE-6"
                    boundary = tree.add("boundary", None, line, index)
                    parsed.compacted[boundary] = line
                    build.current, build.side = boundary, "boundary"
                    number = build.node("model", line, index, segment.sent)
    return mark_open_ends(parsed)


def _chat_reply(doc: Located) -> list[Located] | None:
    if doc.value.get("object") != "chat.completion" or "choices" not in doc.fields:
        return None
    choices = doc.fields["choices"].items
    return [c.fields["message"] for c in choices if "message" in c.fields]


_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def read_openai_chat(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    tree, kinds = parsed.tree, parsed.kinds
    current: int | None = None
    in_tool_run = False
    index = -1
    for segment in _segments(docs, "messages", _chat_reply, source):
        if segment.new_request:
            current, in_tool_run = None, False
        choices_of = current  # a reply's choices are alternatives from one parent
        for record in segment.records:
            index += 1
            message = _object(record, "a message", source)
            role = message.get("role")
            if role not in _CHAT_ROLES:
                raise _fail(record.line, f"unknown message role {role!r}", source)
            kinds[role] += 1
            parsed.records += 1
            sent = segment.sent
            if role == "tool":
                if not in_tool_run:
                    current = tree.add("input", current, record.line, index, sent=sent)
                in_tool_run = True
                call_id = _text_id(message.get("tool_call_id"), record.line, "tool_call_id", source)
                tree.nodes[current].results.append(Occ(call_id, record.line, index))  # type: ignore[index]
                continue
            in_tool_run = False
            if role != "assistant":
                current = tree.add("input", current, record.line, index, sent=sent)
                continue
            parent = current if sent else choices_of
            current = tree.add("model", parent, record.line, index, sent=sent)
            calls = message.get("tool_calls")
            if calls is None:
                continue
            if not isinstance(calls, list):
                raise _fail(record.line, "tool_calls must be a list", source)
            for call, line in record.parts("tool_calls"):
                if not isinstance(call, dict):
                    raise _fail(line, "a tool call must be a JSON object", source)
                call_id = _text_id(call.get("id"), line, "tool call id", source)
                tree.nodes[current].calls.append(Occ(call_id, line, index))
    return mark_open_ends(parsed)


def _responses_reply(doc: Located) -> list[Located] | None:
    if doc.value.get("object") != "response" or "output" not in doc.fields:
        return None
    output = doc.fields["output"]
    if not isinstance(output.value, list):
        return None
    return list(output.items)


def read_openai_responses(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    build = _Builder(parsed.tree)
    item_ids: dict[str, int] = {}
    index = -1
    for segment in _segments(docs, "input", _responses_reply, source):
        build.start(segment)
        if segment.new_request:
            item_ids.clear()
            if segment.body.get("previous_response_id") or segment.body.get("conversation"):
                build.opaque(index + 1)
        for record in segment.records:
            index += 1
            read_responses_item(parsed, build, record, index, segment.sent, item_ids, source)
    return mark_open_ends(parsed)


def read_responses_item(
    parsed: Parsed,
    build: _Builder,
    record: Located,
    index: int,
    sent: bool,
    item_ids: dict[str, int],
    source: str,
) -> None:
    """One Responses item into the tree (shared with the Codex and Agents SDK readers)."""
    item = _object(record, "an input item", source)
    kind = item.get("type")
    role = item.get("role")
    if kind is None and not isinstance(role, str):
        raise _fail(record.line, "an input item needs a 'type' or a 'role'", source)
    placed = responses_role(item)
    label = f"message:{role}" if kind in (None, "message") else str(kind)
    parsed.kinds[label] += 1
    if placed is None:
        parsed.notes.append(Note(record.line, f"item type {kind!r} is not a Responses item type"))
        return
    parsed.records += 1
    side, role_of = placed
    if (
        kind in (None, "message")
        and side == "input"
        and role not in ("user", "system", "developer")
    ):
        raise _fail(record.line, f"unknown message role {role!r}", source)
    item_id = item.get("id")
    if isinstance(item_id, str) and kind != "item_reference":
        if item_id in item_ids:
            parsed.violations.append(
                Violation(
                    "CLOSE-9",
                    index,
                    f"item id {item_id!r} was already used at line {item_ids[item_id]}: "
                    "the provider rejects a duplicate item",
                    record.line,
                    "",
                    (index,),
                    "OAR-5",
                )
            )
        else:
            item_ids[item_id] = record.line
    if kind == "item_reference":
        build.opaque(index)  # a stored item we cannot see: it may be any call
        return
    number = build.node(side, record.line, index, sent)
    node = build.tree.nodes[number]
    call_id = item.get("call_id")
    if side == "input" and role_of != "result":
        build.first_other.setdefault(number, Block(label, record.line, index))
    if role_of == "call":
        node.calls.append(
            Occ(_text_id(call_id, record.line, "call_id", source), record.line, index)
        )
    elif role_of == "result":
        if call_id is None and kind == "local_shell_call_output":
            parsed.violations.append(
                Violation(
                    "CLOSE-4",
                    index,
                    "local_shell_call_output has no call_id (the server pairs by call_id, not "
                    "by the SDK type's id): it answers no call",
                    record.line,
                    node.describe(),
                    (index,),
                    "OAR-2",
                )
            )
            return
        result_id = _text_id(call_id, record.line, "call_id", source)
        after = build.first_other.get(number)  # only input nodes have one
        node.results.append(Occ(result_id, record.line, index, after=after))
    elif kind == "mcp_approval_request":
        node.server_call(Occ(_text_id(item_id, record.line, "id", source), record.line, index))
    elif kind == "mcp_approval_response":
        request = _text_id(
            item.get("approval_request_id"), record.line, "approval_request_id", source
        )
        node.server_result(Occ(request, record.line, index))
