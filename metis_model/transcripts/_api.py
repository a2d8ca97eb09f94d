"""Readers for provider request bodies: Anthropic Messages, OpenAI Chat, OpenAI Responses.

Each input is one JSON document (compact or pretty-printed) or JSON Lines with
one message/item per line. A body is itself the next provider request, so every
call in it must already be answered where its format says:

* anthropic: in the very next message (consecutive same-role messages count as
  one turn, as the API combines them), and results first: a result placed after
  any other block of that turn (text, image, a string content, ..., also one in
  an earlier user message of the turn) leaves its call unanswered, a CLOSE-2 at
  the result. The API refuses such a body with a 400 ("`tool_use` ids were
  found without `tool_result` blocks immediately after"; in older reports "Did
  not find N `tool_result` block(s) at the beginning of this message"). Only
  results that answer a call are held to it; strays stay CLOSE-4. Server-side
  tools (`server_tool_use`, `mcp_tool_use`) count toward CLOSE-7 only: the
  provider answers those itself, and a `pause_turn` continuation legitimately
  ends on an unanswered one.
* openai-chat: by `role: "tool"` messages in the run of tool messages right
  after the assistant message; any other message ends that run.
* openai-responses: by a `*_call_output` item after the call and before the next
  model turn. Model items (reasoning, assistant messages, calls) form a turn; a
  model item that follows any input item (an output, a user/system/developer
  message) starts the next one, because a request was sent in between. Input
  items may sit between a call and its output. Items of other types are
  skipped. With `previous_response_id` or `conversation`, outputs before the
  first model item answer stored calls that cannot be seen: each is accepted once.

Line numbers are exact: the scanner records where each message, content block
and tool call starts. `Violation.index` is the 0-based message (or item) index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from .._errors import TranscriptFormatError
from ._locate import LEAF, Located, Want
from ._tree import Block, NodeKind, Occ, Tree

_MESSAGE = Want(keys={"content": Want(each=LEAF), "tool_calls": Want(each=LEAF)})
# The top level is a body, a bare list, or (JSON Lines) a message per line.
TOP = Want(
    each=_MESSAGE,
    keys={"messages": Want(each=_MESSAGE), "input": Want(each=_MESSAGE), **_MESSAGE.keys},
)

Reader = Callable[[list[Located], str], tuple[Tree, int, Counter[str]]]


def _records(docs: list[Located], key: str, source: str) -> tuple[list[Located], dict[str, Any]]:
    """The messages (or items) of a body, and the body itself (empty if bare)."""
    if len(docs) > 1:  # JSON Lines: one record per line
        return docs, {}
    doc = docs[0]
    if isinstance(doc.value, list):
        return list(doc.items) if doc.items else [Located(v, doc.line) for v in doc.value], {}
    if isinstance(doc.value, dict):
        if key in doc.value:
            inner = doc.fields[key]
            if key == "input" and isinstance(inner.value, str):
                return [], doc.value  # a plain-text input has no items
            if not isinstance(inner.value, list):
                raise TranscriptFormatError(inner.line, f"{key!r} must be a list", source)
            return list(inner.items), doc.value
        if "role" in doc.value or "type" in doc.value:
            return [doc], {}  # a single message or item
    raise TranscriptFormatError(
        doc.line, f"expected a list of {key} or an object with {key!r}", source
    )


def _object(record: Located, what: str, source: str) -> dict[str, Any]:
    if not isinstance(record.value, dict):
        raise TranscriptFormatError(record.line, f"{what} must be a JSON object", source)
    return record.value


def _text_id(value: Any, line: int, what: str, source: str) -> str:
    if not isinstance(value, str):
        raise TranscriptFormatError(line, f"{what} must be a string", source)
    return value


def read_anthropic(docs: list[Located], source: str) -> tuple[Tree, int, Counter[str]]:
    records, _ = _records(docs, "messages", source)
    tree = Tree()
    kinds: Counter[str] = Counter()
    last_role = ""
    first_other: Block | None = None  # the turn's first block that is not a tool_result
    for index, record in enumerate(records):
        message = _object(record, "a message", source)
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise TranscriptFormatError(
                record.line, f"message role must be 'user' or 'assistant', not {role!r}", source
            )
        kinds[role] += 1
        content = message.get("content")
        if not isinstance(content, str | list):
            raise TranscriptFormatError(
                record.line, "message content must be a string or a list", source
            )
        if role != last_role or not tree.nodes:
            parent = len(tree.nodes) - 1 if tree.nodes else None
            tree.add("model" if role == "assistant" else "input", parent, record.line, index)
            first_other = None
        node = tree.nodes[-1]
        last_role = role
        if isinstance(content, str) and first_other is None and role == "user":
            first_other = Block("text", record.line, index)  # a string is one text block
        for block, line in record.parts("content"):
            if not isinstance(block, dict):
                raise TranscriptFormatError(line, "a content block must be a JSON object", source)
            kind = block.get("type")
            if kind != "tool_result" and first_other is None and role == "user":
                first_other = Block(kind if isinstance(kind, str) else "untyped", line, index)
            if kind == "tool_use" and role == "assistant":
                node.calls.append(
                    Occ(_text_id(block.get("id"), line, "tool_use id", source), line, index)
                )
            elif kind in ("server_tool_use", "mcp_tool_use") and role == "assistant":
                call_id = _text_id(block.get("id"), line, f"{kind} id", source)
                node.calls.append(Occ(call_id, line, index, closable=False))
            elif kind == "tool_result":
                result_id = _text_id(block.get("tool_use_id"), line, "tool_use_id", source)
                node.results.append(Occ(result_id, line, index, after=first_other))
    return tree, len(records), kinds


def read_openai_chat(docs: list[Located], source: str) -> tuple[Tree, int, Counter[str]]:
    records, _ = _records(docs, "messages", source)
    tree = Tree()
    kinds: Counter[str] = Counter()
    in_tool_run = False
    for index, record in enumerate(records):
        message = _object(record, "a message", source)
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise TranscriptFormatError(record.line, f"unknown message role {role!r}", source)
        kinds[role] += 1
        parent = len(tree.nodes) - 1 if tree.nodes else None
        if role == "tool":
            if not in_tool_run:
                tree.add("input", parent, record.line, index)
            in_tool_run = True
            call_id = _text_id(message.get("tool_call_id"), record.line, "tool_call_id", source)
            tree.nodes[-1].results.append(Occ(call_id, record.line, index))
            continue
        in_tool_run = False
        if role != "assistant":
            tree.add("input", parent, record.line, index)
            continue
        number = tree.add("model", parent, record.line, index)
        calls = message.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise TranscriptFormatError(record.line, "tool_calls must be a list", source)
        for call, line in record.parts("tool_calls"):
            if not isinstance(call, dict):
                raise TranscriptFormatError(line, "a tool call must be a JSON object", source)
            call_id = _text_id(call.get("id"), line, "tool call id", source)
            tree.nodes[number].calls.append(Occ(call_id, line, index))
    return tree, len(records), kinds


_INPUT_ROLES = frozenset({"user", "system", "developer"})


def read_openai_responses(docs: list[Located], source: str) -> tuple[Tree, int, Counter[str]]:
    records, body = _records(docs, "input", source)
    tree = Tree()
    kinds: Counter[str] = Counter()
    if body.get("previous_response_id") or body.get("conversation"):
        tree.add("opaque", None, None, -1)
    current: NodeKind | None = None  # the kind of node being filled
    for index, record in enumerate(records):
        item = _object(record, "an input item", source)
        kind = item.get("type")
        role = item.get("role")
        if kind is None and isinstance(role, str):
            kind = "message"
        if not isinstance(kind, str):
            raise TranscriptFormatError(
                record.line, "an input item needs a 'type' or a 'role'", source
            )
        kinds[kind if kind != "message" else f"message:{role}"] += 1
        side: NodeKind
        if kind == "message":
            if role == "assistant":
                side = "model"
            elif role in _INPUT_ROLES:
                side = "input"
            else:
                raise TranscriptFormatError(record.line, f"unknown message role {role!r}", source)
        elif kind.endswith("_call_output") or kind == "mcp_approval_response":
            side = "input"
        elif kind.endswith("_call") or kind == "reasoning":
            side = "model"
        else:
            continue  # an item type this check does not model: neutral
        if side != current:
            parent = len(tree.nodes) - 1 if tree.nodes else None
            tree.add(side, parent, record.line, index)
            current = side
        node = tree.nodes[-1]
        call_id = item.get("call_id")
        if kind.endswith("_call_output"):
            node.results.append(
                Occ(_text_id(call_id, record.line, "call_id", source), record.line, index)
            )
        elif kind.endswith("_call") and call_id is not None:
            # Only client-executed calls carry a call_id; server-side ones
            # (web_search_call, ...) are answered by the provider.
            node.calls.append(
                Occ(_text_id(call_id, record.line, "call_id", source), record.line, index)
            )
    return tree, len(records), kinds
