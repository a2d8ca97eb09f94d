"""The replay model conditions of the Read-marker protocol, as provider wire data.

Each condition answers twice, in its provider's streaming format: first one
call `read {"path": "marker.txt"}` (arguments split over several deltas, as
providers stream them), then a final text quoting the marker. The bodies are
written to each format's documented event sequence, in the shape of the real
recordings in `../shared/corpora/provider-streams` (Anthropic Messages SSE,
OpenAI Chat Completions chunks, OpenAI Responses events: explore's
`responses_body`); the runtime's own HTTP, SSE and normalizer code reads them
(`ReplayProvider`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_runtime.providers import Cassette
from metis_runtime.providers import Interaction
from metis_runtime.providers import WireFormat

from ..explore import Call
from ..explore import Turn
from ..explore import sse_body
from ..explore._responses import responses_body

MARKER_FILE = "marker.txt"
ARGS = json.dumps({"path": MARKER_FILE})


def final_text(marker: str) -> str:
    return f"The file {MARKER_FILE} holds the marker {marker}."


def _pieces(text: str, n: int = 4) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(data: Mapping[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


# --- OpenAI Chat Completions -------------------------------------------------------------


def _chat_chunk(n: int, delta: dict[str, Any], finish: str | None = None) -> str:
    return _sse(
        {
            "id": f"chatcmpl-marker{n}",
            "object": "chat.completion.chunk",
            "created": 1782955817,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
    )


def chat_call_body(call_id: str) -> str:
    start = {"index": 0, "id": call_id, "type": "function"}
    out = [
        _chat_chunk(
            1,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**start, "function": {"name": "read", "arguments": ""}}],
            },
        )
    ]
    for piece in _pieces(ARGS):
        out.append(_chat_chunk(1, {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    out.append(_chat_chunk(1, {}, "tool_calls"))
    return "".join(out) + "data: [DONE]\n\n"


def chat_text_body(text: str) -> str:
    out = [_chat_chunk(2, {"role": "assistant", "content": ""})]
    out += [_chat_chunk(2, {"content": piece}) for piece in _pieces(text)]
    out.append(_chat_chunk(2, {}, "stop"))
    return "".join(out) + "data: [DONE]\n\n"


# --- the conditions ------------------------------------------------------------------------


@attrs.frozen
class Condition:
    """A replay model condition: a wire format, how its answers are written,
    and the chunk size the replayed bodies are delivered in."""

    name: str
    wire: WireFormat
    thinking: bool = False
    chunk_size: int = 4096

    def cassette(self, call_id: str, marker: str) -> Cassette:
        text = final_text(marker)
        call = Call(id=call_id, tool="read", input={"path": MARKER_FILE})
        if self.wire == "anthropic":
            think = "The task names a file; read it first." if self.thinking else ""
            bodies = [
                sse_body(Turn(calls=(call,), thinking=think), f"msg_{call_id}_1"),
                sse_body(Turn(text=text), f"msg_{call_id}_2"),
            ]
            base, path = "https://api.anthropic.com", "/v1/messages"
        elif self.wire == "openai-chat":
            bodies = [chat_call_body(call_id), chat_text_body(text)]
            base, path = "https://api.openai.com/v1", "/chat/completions"
        else:
            bodies = [
                responses_body(Turn(calls=(call,)), f"resp_{call_id}_1", _pieces),
                responses_body(Turn(text=text), f"resp_{call_id}_2", _pieces),
            ]
            base, path = "https://api.openai.com/v1", "/responses"
        interactions = tuple(
            Interaction(uri=base + path, wire=self.wire, base_url=base, status=200, body=b)
            for b in bodies
        )
        return Cassette(path=Path(f"<read-marker {self.name}>"), interactions=interactions)


CONDITIONS: tuple[Condition, ...] = (
    Condition("anthropic", "anthropic"),
    Condition("anthropic-thinking", "anthropic", thinking=True),
    Condition("anthropic-7-byte-chunks", "anthropic", chunk_size=7),
    Condition("openai-chat", "openai-chat"),
    Condition("openai-responses", "openai-responses"),
)
