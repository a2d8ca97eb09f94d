"""Reader for pydantic-ai message histories (`ModelMessagesTypeAdapter` JSON).

The input is the JSON that `ModelMessagesTypeAdapter.dump_json(...)` or
`AgentRunResult.all_messages_json()` writes: a list of messages tagged by
`kind` (`request` / `response`), each with `parts` tagged by `part_kind`
(pydantic_ai/messages.py). Several such lists in one file are one history.

Pairing follows pydantic-ai's own graph (`_agent_graph.py`): a response's
`tool-call` (and `tool-search-call`, `capability-load-call`) is answered in
the next request by a `tool-return` (`tool-search-return`,
`capability-load-return`), or a legacy `retry-prompt` naming the tool, with
its `tool_call_id` (PAI-1, PAI-2). `builtin-*` calls are the provider's: their
returns sit in the same response (PAI-3). An id may be reused once its call is
answered (pydantic-ai pairs by position), so CLOSE-9 does not apply. A history
is a log: calls open where it ends (a run deferred or cut) are undecided.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from metis_trace import TranscriptFormatError

from .._report import Note
from ._api import _Builder
from ._api import _notes_for_shared_lines
from ._api import mark_open_ends
from ._locate import LEAF
from ._locate import Located
from ._locate import Want
from ._tree import NodeKind
from ._tree import Occ
from ._tree import Parsed
from ._tree import Tree

TOP = Want(each=Want(keys={"parts": Want(each=LEAF)}))

CALLS = frozenset({"tool-call", "tool-search-call", "capability-load-call"})
RETURNS = frozenset({"tool-return", "tool-search-return", "capability-load-return"})
SERVER_CALLS = frozenset({"builtin-tool-call", "builtin-tool-search-call"})
SERVER_RETURNS = frozenset({"builtin-tool-return", "builtin-tool-search-return"})
CONTENT = frozenset(
    {
        "text",
        "thinking",
        "compaction",
        "file",
        "speech",
        "system-prompt",
        "user-prompt",
        "retry-feedback",
        "instruction",
        "instruction-delta",
        "instruction-digest",
        "instruction-baseline",
        "tool-availability-delta",
        "capability-load-delta",
        "model-settings-delta",
    }
)


def _call_id(part: dict[str, Any], line: int, source: str) -> str:
    value = part.get("tool_call_id")
    if not isinstance(value, str):
        raise TranscriptFormatError(
            line, f"a {part.get('part_kind')} part needs a string tool_call_id", source
        )
    return value


def read_history(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    build = _Builder(parsed.tree)
    index = -1
    for doc in docs:
        if not isinstance(doc.value, list):
            raise TranscriptFormatError(
                doc.line, "expected a list of messages (ModelMessagesTypeAdapter JSON)", source
            )
        for record in doc.items:
            index += 1
            message = record.value
            if not isinstance(message, dict) or message.get("kind") not in ("request", "response"):
                raise TranscriptFormatError(
                    record.line, "a message needs kind 'request' or 'response'", source
                )
            if not isinstance(message.get("parts"), list):
                raise TranscriptFormatError(record.line, "a message needs a list of parts", source)
            kind = message["kind"]
            parsed.records += 1
            parsed.kinds[kind] += 1
            if message.get("state") not in (None, "complete"):
                parsed.notes.append(Note(record.line, f"{kind} state is {message['state']!r}"))
            side: NodeKind = "model" if kind == "response" else "input"
            build.side = None  # every message is its own turn
            number = build.node(side, record.line, index, False)
            node = parsed.tree.nodes[number]
            for part, line in record.parts("parts"):
                if not isinstance(part, dict):
                    raise TranscriptFormatError(line, "a part must be a JSON object", source)
                part_kind = part.get("part_kind")
                parsed.kinds[f"part:{part_kind}"] += 1
                named_retry = part_kind == "retry-prompt" and isinstance(part.get("tool_name"), str)
                if side == "model" and part_kind in CALLS:
                    node.calls.append(Occ(_call_id(part, line, source), line, index))
                elif side == "model" and part_kind in SERVER_CALLS:
                    node.server_call(Occ(_call_id(part, line, source), line, index))
                elif side == "model" and part_kind in SERVER_RETURNS:
                    node.server_result(Occ(_call_id(part, line, source), line, index))
                elif side == "input" and (part_kind in RETURNS or named_retry):
                    node.results.append(Occ(_call_id(part, line, source), line, index))
                elif part_kind not in CONTENT and part_kind != "retry-prompt":
                    # (a retry-prompt without a tool_name is feedback: it answers no call)
                    parsed.notes.append(
                        Note(line, f"part kind {part_kind!r} is not a pydantic-ai {kind} part")
                    )
    return mark_open_ends(parsed)
