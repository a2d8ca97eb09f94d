"""Reader for OpenAI Agents SDK run items (openai/openai-agents-python `items.py`).

The input is the SDK's own JSON of a run: `RunState.to_json()` (as
`RunResult.to_state().to_json()` writes it; `original_input` then
`generated_items`), or a list of run items, one JSON document or one per line.
A run item is `{"type": "<kind>_item", "raw_item": {...}, "agent": ...}`; its
`raw_item` is a Responses API item, which is what `to_input_list()` sends to
the model, so each is read as `--format openai-responses` reads an item
(`_api.read_responses_item`): `tool_call_item` / `handoff_call_item` /
`tool_search_call_item` pair with their output items by `call_id` (OAS-1,
OAS-2), ids are unique across the run (OAR-4, OAR-5). `tool_approval_item`
is never sent to the model and is only counted. A run is a log: calls open
where it ends (an interrupted run awaiting approval) are undecided.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from metis_trace import TranscriptFormatError

from ._api import _Builder
from ._api import _notes_for_shared_lines
from ._api import mark_open_ends
from ._api import read_responses_item
from ._locate import LEAF
from ._locate import Located
from ._locate import Want
from ._tree import Parsed
from ._tree import Tree

TOP = Want(
    each=LEAF,
    keys={"generated_items": Want(each=LEAF), "original_input": Want(each=LEAF)},
)
NOT_SENT = frozenset({"tool_approval_item"})


def _items(doc: Located, source: str) -> list[tuple[Located, bool]]:
    """(record, is a run item) in order: the original input, then the run's items."""
    value = doc.value
    if isinstance(value, dict) and "generated_items" in value:
        out: list[tuple[Located, bool]] = []
        original = doc.fields.get("original_input")
        if original is not None and isinstance(original.value, str):
            out.append((Located({"role": "user", "content": original.value}, original.line), False))
        elif original is not None and isinstance(original.value, list):
            out.extend((item, False) for item in original.items)
        generated = doc.fields["generated_items"]
        if not isinstance(generated.value, list):
            raise TranscriptFormatError(generated.line, "generated_items must be a list", source)
        return out + [(item, True) for item in generated.items]
    if isinstance(value, list):
        return [(item, True) for item in doc.items]
    if isinstance(value, dict) and "raw_item" in value:
        return [(doc, True)]
    raise TranscriptFormatError(
        doc.line, "expected run items, or a RunState with generated_items", source
    )


def read_run_items(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    build = _Builder(parsed.tree)
    item_ids: dict[str, int] = {}
    index = -1
    for doc in docs:
        for record, is_run_item in _items(doc, source):
            index += 1
            if not is_run_item:
                read_responses_item(parsed, build, record, index, False, item_ids, source)
                continue
            item: Any = record.value
            if not isinstance(item, dict) or not isinstance(item.get("type"), str):
                raise TranscriptFormatError(record.line, "a run item needs a string 'type'", source)
            parsed.kinds[f"item:{item['type']}"] += 1
            if item["type"] in NOT_SENT:
                continue
            raw = item.get("raw_item")
            if not isinstance(raw, dict):
                raise TranscriptFormatError(
                    record.line, "a run item needs a 'raw_item' object", source
                )
            read_responses_item(
                parsed, build, Located(raw, record.line), index, False, item_ids, source
            )
    return mark_open_ends(parsed)
