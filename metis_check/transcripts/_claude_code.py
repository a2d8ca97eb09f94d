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
  path, because an abandoned branch is never sent again. Where the file ends
  (the thread's last written turn; file order is time order), a call still open
  is undecided (`open-at-end`): the session may be live, or cut. Call ids are
  unique along each path (ANT-5), as the API wants of every request.
* A `compact_boundary` starts a new thread (its `parentUuid` is null). Calls
  still open at its `logicalParentUuid` (or, when that line is not in the file,
  at the main-thread turn written last) are CLOSE-6, and so is a result after it
  whose call came before it. An `isCompactSummary` root also starts a thread.
* A line whose `isSidechain` differs from its parent's starts its own thread.
* A line whose parent is not in the file starts a thread too: the file is a
  slice, and a result there whose call is in no line of the file answers a call
  in an earlier part of the session (`outside-slice`, undecided).
* Blocks are read as the Anthropic API reads them (`_blocks.anthropic_role`):
  server tools pair within the assistant turns, and a `compaction` block starts
  a new thread for what follows it.

Every line must be JSON objects: one per line, or several written on one line
(read as separate records, with a warning). User and assistant lines need a
`uuid` and a `message` whose content is a string or a list of blocks. A file
of Claude Code metadata lines only (a `summary` file) is a session without
turns (nothing to check, and a note says so); a file without a single user,
assistant or compaction line that holds any other type is not a Claude Code
session. `Violation.index` is the 0-based line index; `line` is the 1-based
line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any

import attrs

from metis_trace import InputError
from metis_trace import TranscriptFormatError
from metis_trace import raw_decode_json
from metis_trace._strict_json import json_lines

from .._report import Note
from ._api import id_rule_violation
from ._blocks import ANTHROPIC_ID
from ._blocks import ANTHROPIC_SERVER_ID
from ._blocks import anthropic_role
from ._tree import Block
from ._tree import Occ
from ._tree import Parsed
from ._tree import Tree


@attrs.frozen
class _Kept:
    """A line that became part of a turn."""

    role: str  # "user", "assistant" or "boundary"
    node: int
    sidechain: bool


# Line types of Claude Code session files (the SDK's `_internal/sessions.py`, and
# observed files): anything else is reported as not checked.
_CHAINED_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})
# Bookkeeping lines, none a turn: skipped (transparent when they have a uuid).
# Beyond the SDK's (`custom-title`, `tag`, `agent_metadata`) and those in the
# corpus (`file-history-snapshot`, `queue-operation`), these are the types
# public readers of real session files list as Claude Code's own (found with
# GitHub code search, 2026: session viewers', exporters' and cleaners'
# allowlists; shared/reference/transcript-formats.md section 8): the session's
# title and last prompt, mode changes, the PR a session opened, /rewind's file
# backups, cost totals, worktree and bridge state.
METADATA_TYPES = frozenset(
    {
        *("summary", "file-history-snapshot", "file-history-delta", "queue-operation"),
        *("custom-title", "ai-title", "tag", "agent_metadata", "agent-name", "last-prompt"),
        *("permission-mode", "mode", "pr-link", "worktree-state", "bridge-session"),
        *("cost-state", "attribution-snapshot", "saved_hook_context", "atis-latch", "frame-link"),
    }
)
KNOWN_TYPES = _CHAINED_TYPES | METADATA_TYPES


def decode_records(text: str, line: int, source: str) -> list[dict[str, Any]]:
    """The JSON objects on one line (strict JSON): one, or several written back to back."""
    records: list[dict[str, Any]] = []
    pos = 0
    while pos < len(text):
        try:
            obj, end = raw_decode_json(text, pos, line=line, source=source)
        except InputError as exc:
            raise TranscriptFormatError(exc.line or line, exc.message, source) from exc
        if not isinstance(obj, dict):
            raise TranscriptFormatError(line, "a record must be a JSON object", source)
        records.append(obj)
        pos = end
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    return records


def split_note(line: int, count: int) -> Note:
    return Note(line, f"holds {count} records written on one line: read them one by one")


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


def record_lines(lines: Iterable[str], source: str, notes: list[Note]) -> Iterator[tuple[int, Any]]:
    """(line number, record) for each JSON record of the non-blank lines; a note
    in `notes` for a line that holds several."""
    for number, text in json_lines(lines):
        records = decode_records(text, number, source)
        if len(records) > 1:
            notes.append(split_note(number, len(records)))
        for record in records:
            yield number, record


def read_session(lines: Iterable[str], source: str = "") -> Parsed:
    """Fold one session file into turns. Linear in the number of lines."""
    parsed = Parsed(Tree(), 0, Counter())
    tree, kinds = parsed.tree, parsed.kinds
    kept: dict[str, _Kept] = {}
    skipped: dict[str, _Kept | None] = {}  # a skipped line -> its nearest kept ancestor
    results_of: dict[int, int] = {}  # assistant node -> its result turn
    message_of: dict[int, str | None] = {}  # assistant node -> message.id
    last_of_thread: dict[int, int] = {}
    compaction_ends: list[int] = []
    foreign: Counter[str] = Counter()
    last_turn: int | None = None  # the main-thread turn written last

    def resolve(uuid: Any) -> _Kept | None:
        if not isinstance(uuid, str):
            return None
        found = kept.get(uuid)
        return found if found is not None else skipped.get(uuid)

    for number, obj in record_lines(lines, source, parsed.notes):
        kind = obj.get("type")
        subtype = obj.get("subtype")
        kinds[str(kind) if kind != "system" else f"system:{subtype}"] += 1
        uuid = obj.get("uuid")
        sidechain = bool(obj.get("isSidechain", False))
        parent_uuid = obj.get("parentUuid")
        parent = resolve(parent_uuid)
        dangling = (
            isinstance(parent_uuid, str) and parent_uuid not in kept and parent_uuid not in skipped
        )
        if parent is not None and parent.sidechain != sidechain:
            parent = None  # a sidechain never continues the main thread, nor the reverse

        if kind == "system" and subtype == "compact_boundary":
            parsed.records += 1
            node = tree.add("boundary", None, number, number - 1)
            parsed.compacted[node] = number
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
            if kind not in KNOWN_TYPES:
                foreign[str(kind)] += 1
            if isinstance(uuid, str):
                skipped[uuid] = parent
            continue

        parsed.records += 1
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
            node = _assistant_blocks(parsed, node, blocks, number, source)
            message_of.setdefault(node, message_id)
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
                    parsed.compacted[node] = number
            turn = tree.nodes[node]
            other: Block | None = None  # results first, within the line only
            for block in blocks:
                block_type = block.get("type")
                kinds[f"block:{block_type}"] += 1
                if block_type == "tool_result":
                    result_id = _id(block, "tool_use_id", number, source)
                    turn.results.append(Occ(result_id, number, number - 1, after=other))
                elif other is None:
                    kind_of = block_type if isinstance(block_type, str) else "untyped"
                    other = Block(kind_of, number, number - 1)
        kept[uuid] = _Kept(kind, node, sidechain)
        if dangling and tree.nodes[node].parent is None:
            parsed.slice_roots.add(node)  # the file starts in the middle of a session
        if not sidechain:
            last_turn = node
        last_of_thread[tree.nodes[node].thread] = node

    if parsed.records == 0 and not foreign and kinds.total():
        # Only bookkeeping lines (Claude Code writes a file of `summary` lines
        # alone): a session with no turn, so no call to close.
        found = ", ".join(sorted(kinds))
        parsed.notes.append(Note(None, f"no turns, only Claude Code metadata lines ({found})"))
    elif parsed.records == 0:
        found = ", ".join(f"{k!r}" for k in sorted(foreign)) or "none"
        raise TranscriptFormatError(
            1,
            f"not a Claude Code session: no user, assistant or compaction line (types: {found})",
            source,
        )
    for kind, count in sorted(foreign.items()):
        parsed.notes.append(
            Note(None, f"{count} line(s) of type {kind!r}, not a Claude Code type: not checked")
        )
    for node in last_of_thread.values():
        parsed.ends.setdefault(node, "open-at-end")
    for node in compaction_ends:
        parsed.ends[node] = "CLOSE-6"
    return parsed


def _assistant_blocks(
    parsed: Parsed, node: int, blocks: list[dict[str, Any]], number: int, source: str
) -> int:
    """One assistant line's blocks into its message; the node that holds what follows."""
    tree = parsed.tree
    for block in blocks:
        block_type = block.get("type")
        parsed.kinds[f"block:{block_type}"] += 1
        role = anthropic_role(block_type)
        turn = tree.nodes[node]
        if role == "call":
            occ = Occ(_id(block, "id", number, source), number, number - 1)
            turn.calls.append(occ)
            if not ANTHROPIC_ID.fullmatch(occ.id):
                parsed.violations.append(
                    id_rule_violation(occ, "tool_use", ANTHROPIC_ID.pattern, "ANT-6")
                )
        elif role == "server_call":
            occ = Occ(_id(block, "id", number, source), number, number - 1)
            turn.server_call(occ)
            if block_type == "server_tool_use" and not ANTHROPIC_SERVER_ID.fullmatch(occ.id):
                parsed.violations.append(
                    id_rule_violation(occ, block_type, ANTHROPIC_SERVER_ID.pattern, "ANT-6")
                )
        elif role == "server_result":
            turn.server_result(Occ(_id(block, "tool_use_id", number, source), number, number - 1))
        elif role == "result":
            turn.results.append(Occ(_id(block, "tool_use_id", number, source), number, number - 1))
        elif role == "compaction" and block.get("content") is not None:
            parsed.ends[node] = "CLOSE-6"  # the API drops every block before it
            boundary = tree.add("boundary", None, number, number - 1)
            parsed.compacted[boundary] = number
            node = tree.add("model", boundary, number, number - 1)
        elif role is None:
            parsed.notes.append(
                Note(number, f"content block type {block_type!r} is not an Anthropic type")
            )
    return node


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
