"""A workload's turn as an OpenAI Responses stream (a workload's `wire`).

The events follow the documented streaming order
(https://platform.openai.com/docs/api-reference/responses-streaming):
`response.created`, `response.in_progress`, then per output item
`response.output_item.added`, its deltas (a text's content part with
`response.output_text.delta`, a call's `response.function_call_arguments.delta`,
and their `.done`) and
`response.output_item.done`, then `response.completed` with every item. A
text answer is one `message` item; each call a `function_call` item whose
`call_id` is the workload's call id. The runtime's own Responses adapter
reads them (`ReplayProvider`), and what it posts back is checked against the
Responses provider rules (`_wire.sent_problems`). Each event carries the
fields the official OpenAI SDK's event types require (a test validates them
with `openai.types.responses`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._workload import Turn

__all__ = ["RESPONSES_BASE_URL", "RESPONSES_URI", "responses_body"]

RESPONSES_BASE_URL = "https://api.openai.com/v1"
RESPONSES_URI = RESPONSES_BASE_URL + "/responses"
MODEL = "gpt-4.1-2025-04-14"
CREATED_AT = 1782955817  # a fixed time: the bodies are the same every run


def _event(n: int, kind: str, fields: dict[str, Any]) -> str:
    data = {"type": kind, **fields, "sequence_number": n}
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


Split = Callable[[str], list[str]]


def _whole(text: str) -> list[str]:
    return [text]


def _items(
    turn: Turn, response_id: str, split: Split
) -> list[tuple[dict[str, Any], list[tuple[str, Any]]]]:
    """Each output item as (the item done, its deltas as (event, fields))."""
    out: list[tuple[dict[str, Any], list[tuple[str, Any]]]] = []
    text = turn.text or ("" if turn.calls else "Done.")
    if text:
        item_id = f"msg_{response_id}"
        part = {"type": "output_text", "text": text, "annotations": []}
        where = {"item_id": item_id, "content_index": 0}
        deltas = [
            ("response.content_part.added", {**where, "part": {**part, "text": ""}}),
            *(
                ("response.output_text.delta", {**where, "delta": d, "logprobs": []})
                for d in split(text)
            ),
            ("response.output_text.done", {**where, "text": text, "logprobs": []}),
            ("response.content_part.done", {**where, "part": part}),
        ]
        done = {"id": item_id, "type": "message", "role": "assistant", "content": [part]}
        out.append((done, deltas))
    for call in turn.calls:
        item_id = f"fc_{call.id}"
        arguments = json.dumps(call.input, separators=(",", ":"))
        where = {"item_id": item_id}
        deltas = [
            *(
                ("response.function_call_arguments.delta", {**where, "delta": d})
                for d in split(arguments)
            ),
            ("response.function_call_arguments.done", {**where, "arguments": arguments}),
        ]
        done = {
            "id": item_id,
            "type": "function_call",
            "call_id": call.id,
            "name": call.tool,
            "arguments": arguments,
        }
        out.append((done, deltas))
    return out


def responses_body(turn: Turn, response_id: str, split: Split = _whole) -> str:
    """The SSE body of one assistant answer on the Responses wire; `split`
    cuts a text or a call's arguments into the deltas that stream it."""
    items = _items(turn, response_id, split)
    events: list[tuple[str, dict[str, Any]]] = []

    def response(status: str) -> dict[str, Any]:
        done = [{**item, "status": "completed"} for item, _ in items]
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        return {
            "id": response_id,
            "object": "response",
            "created_at": CREATED_AT,
            "status": status,
            "model": MODEL,
            "output": done if status == "completed" else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage if status == "completed" else None,
        }

    events.append(("response.created", {"response": response("in_progress")}))
    events.append(("response.in_progress", {"response": response("in_progress")}))
    for index, (item, deltas) in enumerate(items):
        empty: dict[str, Any] = {"content": []} if item["type"] == "message" else {"arguments": ""}
        added = {**item, **empty, "status": "in_progress"}
        events.append(("response.output_item.added", {"output_index": index, "item": added}))
        events += [(kind, {"output_index": index, **fields}) for kind, fields in deltas]
        done = {**item, "status": "completed"}
        events.append(("response.output_item.done", {"output_index": index, "item": done}))
    events.append(("response.completed", {"response": response("completed")}))
    return "".join(_event(n, kind, fields) for n, (kind, fields) in enumerate(events))
