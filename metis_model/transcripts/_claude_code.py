"""Reader for Claude Code session files (JSON Lines, one record per line).

The file is a tree threaded by `uuid`/`parentUuid`. The reader folds it into
the turns that were actually sent to the provider:

* Lines of other types (progress, hooks, `file-history-snapshot`, `system`,
  `summary`, `queue-operation`, ...) are skipped but stay transparent: a line
  whose parent is a skipped line hangs from that line's nearest kept ancestor.
* Assistant content blocks are written one per line and share `message.id`;
  lines of one id form one assistant message. A line joins its parent's message
  when the parent is that message, or the results that answer it: with
  streaming tool execution, results are written while the message still grows.
* Parallel results hang from their own `tool_use` line, so they form sibling
  branches that are not rewinds: every `tool_result` line whose parent is an
  assistant message joins that message's one result turn, and consecutive user
  lines join one turn (Claude Code merges them before sending). Once a message
  has results, any later line hanging from the message itself continues from
  that result turn: the next turn may hang from any of the sibling results.
* Results first applies within one line only: a line is one stored API message,
  so a `tool_result` after a text (or other) block of the same line is a
  CLOSE-2 where a provider request follows. Across the lines of one turn it is
  not checked: those lines are written as things happen (each result as its tool
  finishes), and Claude Code puts the results first when it merges them.
* Any other branching is a rewind. Each root-to-leaf path is checked, but a
  call needs its result only where a later provider request follows on that
  path, because an abandoned branch is never sent again. The exception is where
  the run ended: the thread's last written turn (file order is time order) is
  held to full closure, so a session cut after a `tool_use` is a CLOSE-2.
* A `compact_boundary` starts a new thread (its `parentUuid` is null). Calls
  still open at its `logicalParentUuid` (or, when that line is not in the file,
  at the main-thread turn written last) are CLOSE-6, and so is a result after it
  whose call came before it. An `isCompactSummary` root also starts a thread.
* A line whose `isSidechain` differs from its parent's starts its own thread.

Every line must be a JSON object; user and assistant lines need a `uuid` and a
`message` whose content is a string or a list of blocks. `Violation.index` is
the 0-based line index; `line` is the 1-based line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import attrs

from .._errors import InputError, TranscriptFormatError
from ..trace import decode_json
from ._tree import Block, Occ, Tree


@attrs.frozen
class _Kept:
    """A line that became part of a turn."""

    role: str  # "user", "assistant" or "boundary"
    node: int
    sidechain: bool


@attrs.frozen
class Session:
    """A session folded into turns, with what the closure check needs."""

    tree: Tree
    ends: dict[int, str]
    compacted: dict[int, int]
    events: int
    kinds: Counter[str]


def _decode(text: str, line: int, source: str) -> dict[str, Any]:
    try:
        obj = decode_json(text, line=line, source=source)  # strict JSON
    except InputError as exc:
        raise TranscriptFormatError(exc.line or line, exc.message, source) from exc
    if not isinstance(obj, dict):
        raise TranscriptFormatError(line, "a session line must be a JSON object", source)
    return obj


def _blocks(obj: dict[str, Any], line: int, source: str) -> list[dict[str, Any]]:
    message = obj.get("message")
    if not isinstance(message, dict):
        raise TranscriptFormatError(line, f"a {obj['type']} line needs a 'message' object", source)
    content = message.get("content")
    if isinstance(content, str):
        return []
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise TranscriptFormatError(
            line, "message content must be a string or a list of objects", source
        )
    return content


def _id(block: dict[str, Any], key: str, line: int, source: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise TranscriptFormatError(line, f"{block.get('type')} {key} must be a string", source)
    return value


def read_session(lines: Iterable[str], source: str = "") -> Session:
    """Fold one session file into turns. Linear in the number of lines."""
    tree = Tree()
    kept: dict[str, _Kept] = {}
    skipped: dict[str, _Kept | None] = {}  # a skipped line -> its nearest kept ancestor
    results_of: dict[int, int] = {}  # assistant node -> its result turn
    message_of: dict[int, str | None] = {}  # assistant node -> message.id
    last_of_thread: dict[int, int] = {}
    compaction_ends: list[int] = []
    compacted: dict[int, int] = {}
    kinds: Counter[str] = Counter()
    events = 0
    last_turn: int | None = None  # the main-thread turn written last

    def resolve(uuid: Any) -> _Kept | None:
        if not isinstance(uuid, str):
            return None
        found = kept.get(uuid)
        return found if found is not None else skipped.get(uuid)

    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        obj = _decode(text, number, source)
        kind = obj.get("type")
        subtype = obj.get("subtype")
        kinds[str(kind) if kind != "system" else f"system:{subtype}"] += 1
        uuid = obj.get("uuid")
        sidechain = bool(obj.get("isSidechain", False))
        parent = resolve(obj.get("parentUuid"))
        if parent is not None and parent.sidechain != sidechain:
            parent = None  # a sidechain never continues the main thread, nor the reverse

        if kind == "system" and subtype == "compact_boundary":
            events += 1
            node = tree.add("boundary", None, number, number - 1)
            compacted[node] = number
            before = resolve(obj.get("logicalParentUuid"))
            if before is not None:
                compaction_ends.append(before.node)
            elif last_turn is not None:
                compaction_ends.append(last_turn)  # parent not in the file: the latest turn
            if isinstance(uuid, str):
                kept[uuid] = _Kept("boundary", node, sidechain)
            last_of_thread[node] = node
            continue
        if kind not in ("user", "assistant"):
            if isinstance(uuid, str):
                skipped[uuid] = parent
            continue

        events += 1
        if not isinstance(uuid, str):
            raise TranscriptFormatError(number, f"a {kind} line needs a string 'uuid'", source)
        blocks = _blocks(obj, number, source)
        parent_node = parent.node if parent is not None else None
        if kind == "assistant":
            raw_id = obj["message"].get("id")
            message_id = raw_id if isinstance(raw_id, str) else None
            node = _same_message(tree, parent, message_id, message_of, results_of)
            if node < 0:
                if parent is not None and parent.role == "assistant":
                    # A new message after one with results continues from those results.
                    parent_node = results_of.get(parent.node, parent.node)
                node = tree.add("model", parent_node, number, number - 1)
                message_of[node] = message_id
            turn = tree.nodes[node]
            for block in blocks:
                block_type = block.get("type")
                if block_type == "tool_use":
                    turn.calls.append(Occ(_id(block, "id", number, source), number, number - 1))
                elif block_type in ("server_tool_use", "mcp_tool_use"):
                    call = Occ(_id(block, "id", number, source), number, number - 1, closable=False)
                    turn.calls.append(call)
                elif block_type == "tool_result":
                    turn.results.append(
                        Occ(_id(block, "tool_use_id", number, source), number, number - 1)
                    )
        else:
            has_results = any(b.get("type") == "tool_result" for b in blocks)
            if parent is not None and parent.role == "user":
                node = parent.node
            elif parent is not None and parent.role == "assistant" and parent.node in results_of:
                node = results_of[parent.node]  # more of the message's one result turn
            elif parent is not None and parent.role == "assistant" and has_results:
                node = results_of.get(parent.node, -1)
                if node < 0:
                    node = results_of[parent.node] = tree.add(
                        "input", parent.node, number, number - 1
                    )
            else:
                node = tree.add("input", parent_node, number, number - 1)
                if parent is None and obj.get("isCompactSummary"):
                    compacted[node] = number
            turn = tree.nodes[node]
            other: Block | None = None  # results first, within the line only
            for block in blocks:
                block_type = block.get("type")
                if block_type == "tool_result":
                    result_id = _id(block, "tool_use_id", number, source)
                    turn.results.append(Occ(result_id, number, number - 1, after=other))
                elif other is None:
                    kind_of = block_type if isinstance(block_type, str) else "untyped"
                    other = Block(kind_of, number, number - 1)
        kept[uuid] = _Kept(kind, node, sidechain)
        if not sidechain:
            last_turn = node
        last_of_thread[tree.nodes[node].thread] = node

    ends = {node: "CLOSE-2" for node in last_of_thread.values()}
    for node in compaction_ends:
        ends[node] = "CLOSE-6"
    return Session(tree, ends, compacted, events, kinds)


def _same_message(
    tree: Tree,
    parent: _Kept | None,
    message_id: str | None,
    message_of: dict[int, str | None],
    results_of: dict[int, int],
) -> int:
    """The assistant node an assistant line continues, or -1 for a new message."""
    if parent is None or message_id is None:
        return -1
    if parent.role == "assistant":
        return parent.node if message_of.get(parent.node) == message_id else -1
    if parent.role != "user":
        return -1
    owner = tree.nodes[parent.node].parent
    if (
        owner is not None
        and results_of.get(owner) == parent.node
        and message_of.get(owner) == message_id
    ):
        return owner
    return -1
