"""Anthropic Messages API: request body, stream normalizer, httpx provider.

Wire events: message_start, content_block_start / content_block_delta
(text_delta, input_json_delta, thinking_delta, signature_delta, citations_delta)
/ content_block_stop, message_delta (stop_reason, usage), message_stop, ping,
error. Server tools (server_tool_use, web_search_tool_result, mcp_tool_use, ...)
run at the provider: their blocks are kept as `ServerToolBlock`s (the wire JSON,
streamed input joined) and `redacted_thinking` as `RedactedThinkingBlock`s, in
wire order, and both are sent back verbatim in the next request, as the API
requires of the turn it continues. A server tool block is never a tool call of
ours and gets no tool result. A `compaction` block (server-side compaction,
https://platform.claude.com/docs/en/build-with-claude/compaction: a
content_block_start, one `compaction_delta` with the whole summary in
`content`, and `encrypted_content` where the API sends it, then
content_block_stop) is kept the same way, its delta joined into the block, and
sent back verbatim: "you must pass the compaction block back to the API on
subsequent requests".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import ClassVar
from typing import Unpack

from ._base import WireNormalizer
from ._base import usage_int
from ._builder import Slot
from ._http import HTTPProvider
from ._http import HTTPSettings
from ._options import NO_OPTIONS
from ._options import WireOptions
from ._types import ModelRequest
from ._types import RedactedThinkingBlock
from ._types import ServerToolBlock
from ._types import TextBlock
from ._types import ThinkingBlock
from ._types import ToolResultBlock
from ._types import ToolUseBlock
from ._types import Usage

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


def _is_server_block(kind: str) -> bool:
    return (
        kind in ("server_tool_use", "container_upload")
        or kind.startswith("mcp_")
        or (kind.endswith("_tool_result"))
    )


_OPAQUE = ("redacted_thinking", "server_tool")
# The deltas that extend a block's text: the block kind each belongs to, and
# the field its piece of text is in.
_DELTAS = {
    "text_delta": ("text", "text"),
    "input_json_delta": ("tool_use", "partial_json"),
    "thinking_delta": ("thinking", "thinking"),
}


class AnthropicNormalizer(WireNormalizer):
    provider: ClassVar[str] = "anthropic"

    def __init__(self) -> None:
        super().__init__()
        self._started = False
        # wire index -> our slot; None for a block we skip (unknown type).
        self._slots: dict[int, Slot | None] = {}
        self._stopped: set[int] = set()
        self._stop_reason: str | None = None
        self._usage: dict[str, int] = {}

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = self._type
        if kind == "ping":
            return
        if kind == "error":
            self._raise_remote(event)
        if kind == "message_start":
            self._message_start(event)
            return
        if kind.startswith("content_block_") and not self._started:
            raise self._error("content before message_start")
        if kind == "content_block_delta":  # the hot path first
            self._content_block_delta(event)
        elif kind == "content_block_start":
            self._content_block_start(event)
        elif kind == "content_block_stop":
            self._content_block_stop(event)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                self._stop_reason = delta["stop_reason"]
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            if not self._started:
                raise self._error("message_stop before message_start")
            self._message_stop()
        # Unknown event types are ignored: the API documents that new ones may appear.

    def _message_start(self, event: Mapping[str, Any]) -> None:
        if self._started:
            raise self._error("second message_start in one stream")
        self._started = True
        message = self._get_map(event, "message")
        self._b.take_id(message.get("id"), "message_start has no message id", "used 'unknown'")
        self._take_usage(message.get("usage"))

    def _take_usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        # message_delta usage is cumulative, so later values replace earlier ones.
        for ours, theirs in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
        ):
            value = usage_int(usage, theirs)
            if value is not None:
                self._usage[ours] = value

    def _content_block_start(self, event: Mapping[str, Any]) -> None:
        index = self._get_int(event, "index")
        if index in self._slots:
            raise self._error(f"block {index} started twice")
        block = self._get_map(event, "content_block")
        kind = block.get("type")
        b = self._b
        if kind == "text":
            slot = b.start_text()
            b.delta(slot, self._opt_str(block, "text"))
        elif kind == "thinking":
            slot = b.start_thinking()
            b.delta(slot, self._opt_str(block, "thinking"))
            if signature := self._opt_str(block, "signature"):
                b.add_signature(slot, signature)
        elif kind == "tool_use":
            name = self._opt_str(block, "name")
            if not name:
                raise self._error(f"tool_use block {index} has no name")
            initial = block.get("input")
            slot = b.start_tool(
                self._opt_str(block, "id"),
                name,
                dict(initial) if isinstance(initial, Mapping) else None,
            )
        elif kind == "redacted_thinking":
            data = self._opt_str(block, "data")
            if not data:
                self._slots[index] = None
                b.note(f"redacted_thinking block {index} has no data", "skipped it")
                return
            slot = b.start_opaque("redacted_thinking", {"data": data})
        elif isinstance(kind, str) and (_is_server_block(kind) or kind == "compaction"):
            slot = b.start_opaque("server_tool", dict(block))
        else:
            self._slots[index] = None
            b.note(f"wire block {index} has unknown type {kind!r}", "skipped it")
            return
        self._slots[index] = slot

    def _content_block_delta(self, event: Mapping[str, Any]) -> None:
        index = self._get_int(event, "index")
        if index not in self._slots:
            raise self._error(f"delta for block {index}, which was never started")
        slot = self._slots[index]
        if slot is None:
            return  # a skipped block's deltas (e.g. a server tool's input) go with it
        if index in self._stopped:
            raise self._error(f"delta for block {index} after its content_block_stop")
        delta = self._get_map(event, "delta")
        kind = delta.get("type")
        if slot.kind in _OPAQUE:
            # A server tool streams its input like a tool_use; a compaction block
            # its summary (and encrypted state) in one delta; nothing else is kept.
            if kind == "input_json_delta" and slot.kind == "server_tool":
                self._b.delta(slot, self._opt_str(delta, "partial_json"))
            elif kind == "compaction_delta" and slot.raw is not None:
                for key in ("content", "encrypted_content"):
                    if isinstance(piece := delta.get(key), str):
                        slot.raw[key] = (slot.raw.get(key) or "") + piece
            return
        if isinstance(kind, str) and kind in _DELTAS:
            block_kind, field = _DELTAS[kind]
            self._expect(slot, block_kind, kind, index)
            self._b.delta(slot, self._opt_str(delta, field))
        elif kind == "signature_delta":
            self._expect(slot, "thinking", kind, index)
            self._b.add_signature(slot, self._opt_str(delta, "signature"))
        # citations_delta and delta types added later carry nothing we keep.

    def _expect(self, slot: Slot, kind: str, delta: str, index: int) -> None:
        if slot.kind != kind:
            raise self._error(f"{delta} for block {index}, which is a {slot.kind} block")

    def _content_block_stop(self, event: Mapping[str, Any]) -> None:
        index = self._get_int(event, "index")
        if index not in self._slots:
            raise self._error(f"stop for block {index}, which was never started")
        if index in self._stopped:
            raise self._error(f"block {index} stopped twice")
        self._stopped.add(index)
        slot = self._slots[index]
        if slot is not None:
            self._b.finish(slot)

    def _message_stop(self) -> None:
        self._b.finish_open("had no content_block_stop before message_stop")
        stop = self._stop_reason
        if stop is None:
            stop = "tool_use" if self._b.has_tool_use else "end_turn"
            self._b.note("message ended without a stop_reason", f"inferred {stop!r}")
        self._complete(stop, Usage(**self._usage) if self._usage else None)

    def _on_end(self) -> None:
        if not self._started:
            raise self._truncated("no message_start")
        raise self._truncated("no message_stop")


# --- request -------------------------------------------------------------------------


def _user_content(blocks: tuple[Any, ...]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            item: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": block.content,
            }
            if block.is_error:
                item["is_error"] = True
            results.append(item)
        elif isinstance(block, TextBlock) and block.text:
            rest.append({"type": "text", "text": block.text})
    # The API wants the results first in the message that answers the calls.
    return results + rest


def _assistant_content(blocks: tuple[Any, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ThinkingBlock):
            if block.signature:  # unsigned thinking (scripted, other vendors) is refused
                out.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, TextBlock):
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif isinstance(block, RedactedThinkingBlock):
            out.append({"type": "redacted_thinking", "data": block.data})
        elif isinstance(block, ServerToolBlock):
            out.append(dict(block.raw))  # verbatim: the provider ran it and checks it
    return out


def anthropic_request_body(
    request: ModelRequest,
    model: str,
    *,
    thinking_budget: int | None = None,
    options: WireOptions = NO_OPTIONS,
) -> dict[str, Any]:
    """The Messages API body for `request` (streaming). A thinking level in
    `options` decides the thinking fields; else `thinking_budget`, if given."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": [
            {
                "role": m.role,
                "content": _user_content(m.content)
                if m.role == "user"
                else _assistant_content(m.content),
            }
            for m in request.messages
        ],
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
    if request.tool_choice is not None:
        # https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use
        body["tool_choice"] = {"type": "tool", "name": request.tool_choice}
    if thinking_budget and options.thinking is None:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    return options.anthropic(body, model)


class AnthropicProvider(HTTPProvider):
    """Streams the Messages API over plain httpx.

    A request that fails transiently (429, 5xx, 529 overloaded, a refused
    connection, an in-stream `overloaded_error`) before any event is yielded
    is sent again under `retry` (by default up to 2 retries; see `RetryPolicy`).
    """

    name = "anthropic"
    path = "/v1/messages"
    key_variable = "ANTHROPIC_API_KEY"
    url_variable = "ANTHROPIC_BASE_URL"
    default_url = ANTHROPIC_URL

    def __init__(
        self, model: str, *, thinking_budget: int | None = None, **settings: Unpack[HTTPSettings]
    ) -> None:
        super().__init__(model, **settings)
        self._thinking_budget = thinking_budget

    def headers(self, key: str) -> dict[str, str]:
        return {
            "x-api-key": key,
            "anthropic-version": ANTHROPIC_VERSION,
            "accept": "text/event-stream",
        }

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return anthropic_request_body(
            request, self.model, thinking_budget=self._thinking_budget, options=self.options
        )

    def normalizer(self) -> WireNormalizer:
        return AnthropicNormalizer()
