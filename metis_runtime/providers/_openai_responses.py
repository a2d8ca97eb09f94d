"""OpenAI Responses API: request body, stream normalizer, httpx provider.

Wire: `response.created`, then per output item `response.output_item.added`
... `response.output_item.done`; text comes as `response.output_text.delta`,
function-call arguments as `response.function_call_arguments.delta` / `.done`,
reasoning as `response.reasoning_summary_text.delta` (or
`response.reasoning_text.delta`); `response.completed` / `response.incomplete`
end the stream, `response.failed` and `error` report failures. A tool call's
id is the item's `call_id`, which `function_call_output` refers to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import ClassVar

from ._base import WireNormalizer
from ._base import compact_json
from ._base import usage_int
from ._builder import Slot
from ._openai_chat import OpenAIHTTPProvider
from ._options import NO_OPTIONS
from ._options import WireOptions
from ._responses_client import CLIENT_ITEMS
from ._responses_client import client_call
from ._responses_client import client_output
from ._types import ModelRequest
from ._types import TextBlock
from ._types import ToolResultBlock
from ._types import ToolUseBlock
from ._types import Usage

# Output items the provider runs itself (hosted tools): never tool calls of ours.
_SERVER_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "computer_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)

_INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


class _Item:
    __slots__ = ("final_args", "kind", "part", "raw", "slots")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # message | reasoning | function_call | client | skipped
        self.raw: Mapping[str, Any] = {}  # client: the item as added
        self.slots: dict[int, Slot] = {}  # message: by content_index; others: key 0
        self.final_args: str | None = None
        self.part: int | None = None  # reasoning: the summary/content part being streamed


class OpenAIResponsesNormalizer(WireNormalizer):
    provider: ClassVar[str] = "openai-responses"

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[int, _Item] = {}
        self._item_ids: dict[str, int] = {}

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = self._type
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self._text_delta(event)
        elif kind == "response.function_call_arguments.delta":
            item = self._item(event, "function_call")
            if item is not None:
                self._delta(item.slots[0], self._opt_str(event, "delta"))
        elif kind == "response.custom_tool_call_input.delta":
            item = self._item(event, "client")
            if item is not None:
                item.final_args = (item.final_args or "") + self._opt_str(event, "delta")
        elif kind == "response.custom_tool_call_input.done":
            item = self._item(event, "client")
            if item is not None and isinstance(event.get("input"), str):
                item.final_args = event["input"]
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._reasoning_delta(event)
        elif kind == "response.output_item.added":
            self._item_added(event)
        elif kind == "response.output_item.done":
            self._item_done(event)
        elif kind in (
            "response.output_text.done",
            "response.refusal.done",
            "response.content_part.done",
        ):
            item = self._item(event, "message")
            if item is not None:
                slot = item.slots.get(self._content_index(event))
                if slot is not None:
                    self._b.finish(slot)
        elif kind == "response.function_call_arguments.done":
            item = self._item(event, "function_call")
            if item is not None:
                arguments = event.get("arguments")
                if isinstance(arguments, str):
                    item.final_args = arguments
        elif kind in ("response.created", "response.in_progress", "response.queued"):
            self._take_id(event.get("response"))
        elif kind in ("response.completed", "response.incomplete"):
            self._completed(event)
        elif kind == "response.failed":
            response = event.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            self._raise_remote(error or {"message": "response.failed without details"})
        elif kind == "error":
            self._raise_remote(event)
        # Other events (content_part.added, annotations, hosted-tool progress) carry nothing new.

    def _take_id(self, response: Any) -> None:
        if self._b.message_id or not isinstance(response, Mapping):
            return
        response_id = response.get("id")
        if isinstance(response_id, str) and response_id:
            self._b.message_id = response_id

    def _content_index(self, event: Mapping[str, Any]) -> int:
        value = event.get("content_index", 0)
        return value if isinstance(value, int) else 0

    def _lookup(self, event: Mapping[str, Any]) -> _Item:
        index = event.get("output_index")
        item = self._items.get(index) if isinstance(index, int) else None
        if item is None:
            item_id = event.get("item_id")
            if isinstance(item_id, str) and item_id in self._item_ids:
                item = self._items[self._item_ids[item_id]]
        if item is None:
            raise self._error(f"event for output item {index}, which was never added")
        return item

    def _item(self, event: Mapping[str, Any], expected: str) -> _Item | None:
        """The item an event belongs to; None if that item is one we skip."""
        item = self._lookup(event)
        if item.kind == "skipped":
            return None
        if item.kind != expected:
            raise self._error(f"{self._type} for a {item.kind} output item")
        return item

    def _item_added(self, event: Mapping[str, Any]) -> None:
        index = self._get_int(event, "output_index")
        if index in self._items:
            raise self._error(f"output item {index} added twice")
        raw = self._get_map(event, "item")
        kind = raw.get("type")
        item_id = raw.get("id")
        if isinstance(item_id, str):
            self._item_ids[item_id] = index
        if kind == "function_call":
            name = self._opt_str(raw, "name")
            if not name:
                raise self._error(f"function_call item {index} has no name")
            item = _Item(kind)
            item.slots[0] = self._b.start_tool(self._opt_str(raw, "call_id"), name)
            self._b.delta(item.slots[0], self._opt_str(raw, "arguments"))
        elif kind in ("message", "reasoning"):
            item = _Item(kind)
        elif kind in CLIENT_ITEMS:
            item = _Item("client")  # the call is taken whole from its done item
            item.raw = raw
        else:
            item = _Item("skipped")
            if isinstance(kind, str) and kind in _SERVER_ITEMS:
                problem = f"output item {index} is {kind}, run by the provider itself"
                repair = "left it out of the message; it is not a tool call of ours"
            else:
                problem, repair = f"output item {index} has unknown type {kind!r}", "skipped it"
            self._b.note(problem, repair)
        self._items[index] = item

    def _text_delta(self, event: Mapping[str, Any]) -> None:
        item = self._item(event, "message")
        if item is None:
            return
        part = self._content_index(event)
        slot = item.slots.get(part)
        if slot is None:
            slot = item.slots[part] = self._b.start_text()
        self._delta(slot, self._opt_str(event, "delta"))

    def _reasoning_delta(self, event: Mapping[str, Any]) -> None:
        item = self._item(event, "reasoning")
        if item is None:
            return
        part = event.get("summary_index", event.get("content_index", 0))
        slot = item.slots.get(0)
        if slot is None:
            slot = item.slots[0] = self._b.start_thinking(lazy=True)
        elif part != item.part and slot.parts and slot.open:
            self._b.delta(slot, "\n\n")  # summary parts are paragraphs of one thought
        item.part = part if isinstance(part, int) else None
        self._delta(slot, self._opt_str(event, "delta"))

    def _item_done(self, event: Mapping[str, Any]) -> None:
        item = self._lookup(event)
        if item.kind == "skipped":
            return
        raw = event.get("item")
        raw = raw if isinstance(raw, Mapping) else {}
        b = self._b
        if item.kind == "client":
            self._client_done(event, item, raw or item.raw)
        elif item.kind == "function_call":
            arguments = raw.get("arguments")
            final = arguments if isinstance(arguments, str) else item.final_args
            b.finish(item.slots[0], final_arguments=final)
        elif item.kind == "reasoning":
            slot = item.slots.get(0)
            if slot is None:
                # Summaries that were never streamed as deltas still count.
                texts = [s.get("text") for s in raw.get("summary") or () if isinstance(s, Mapping)]
                text = "\n\n".join(t for t in texts if isinstance(t, str) and t)
                if not text:
                    return
                slot = item.slots[0] = b.start_thinking(lazy=True)
                b.delta(slot, text)
            encrypted = raw.get("encrypted_content")
            b.finish(slot, signature=encrypted if isinstance(encrypted, str) else None)
        else:
            if not item.slots:
                for part, content in enumerate(raw.get("content") or ()):
                    if isinstance(content, Mapping):
                        said = content.get("text") or content.get("refusal")
                        if isinstance(said, str) and said:
                            item.slots[part] = b.start_text()
                            b.delta(item.slots[part], said)
            for part in sorted(item.slots):
                b.finish(item.slots[part])

    def _client_done(self, event: Mapping[str, Any], item: _Item, raw: Mapping[str, Any]) -> None:
        """A client-executed item as one of our tool calls (`_responses_client`)."""
        index = self._get_int(event, "output_index")
        kind = raw.get("type")
        call = client_call(raw, item.final_args if raw.get("input") is None else None)
        if call is None:
            problem = f"output item {index} is {kind}, run by the provider itself"
            self._b.note(problem, "left it out of the message; it is not a tool call of ours")
            return
        name, tool_input = call
        if not name:
            raise self._error(f"{kind} item {index} has no name")
        wire = dict(raw)
        if kind == "custom_tool_call" and wire.get("input") is None and item.final_args is not None:
            wire["input"] = item.final_args
        call_id = self._opt_str(raw, "call_id") or self._opt_str(raw, "id")
        slot = self._b.start_tool(call_id, name, initial_input=tool_input, wire=wire)
        self._b.finish(slot)

    def _completed(self, event: Mapping[str, Any]) -> None:
        response = event.get("response")
        response = response if isinstance(response, Mapping) else {}
        self._take_id(response)
        if not self._b.message_id:
            self._b.message_id = "unknown"
            self._b.note("response has no id", "used 'unknown' as the message id")
        if self._type == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, Mapping) else None
            stop = _INCOMPLETE.get(reason, reason) if isinstance(reason, str) else "max_tokens"
        else:
            stop = "tool_use" if self._b.has_tool_use else "end_turn"
        usage = response.get("usage")
        tokens = None
        if isinstance(usage, Mapping):
            tokens = Usage(
                input_tokens=usage_int(usage, "input_tokens") or 0,
                output_tokens=usage_int(usage, "output_tokens") or 0,
                cache_read_tokens=usage_int(usage, "input_tokens_details", "cached_tokens") or 0,
            )
        self._b.finish_open("had no output_item.done before the response completed")
        self._complete(stop, tokens)

    def _on_end(self) -> None:
        raise self._truncated("no response.completed")


# --- request -------------------------------------------------------------------------


def _input_items(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # Client calls that came as their own item types go back as they came,
    # and their results as those items' outputs (`_responses_client`).
    wires = {
        block.id: block.wire
        for message in request.messages
        for block in message.content
        if isinstance(block, ToolUseBlock) and block.wire is not None
    }
    for message in request.messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in wires:
                wire = wires[block.tool_use_id]
                out.append(client_output(wire, block.tool_use_id, block.content, block.is_error))
            elif isinstance(block, ToolUseBlock) and block.wire is not None:
                out.append(dict(block.wire))
            elif isinstance(block, ToolResultBlock):
                out.append(
                    {
                        "type": "function_call_output",
                        "call_id": block.tool_use_id,
                        "output": block.content,
                    }
                )
            elif isinstance(block, TextBlock) and block.text:
                out.append({"role": message.role, "content": block.text})
            elif isinstance(block, ToolUseBlock):
                out.append(
                    {
                        "type": "function_call",
                        "call_id": block.id,
                        "name": block.name,
                        "arguments": compact_json(block.input),
                    }
                )
            # Not sent: thinking (a reasoning item needs its server-side id, or
            # encrypted_content, which this adapter never asks for: no `include`),
            # and Anthropic's redacted_thinking and server tool blocks, which
            # this API has no input item for.
    return out


def openai_responses_request_body(
    request: ModelRequest, model: str, options: WireOptions = NO_OPTIONS
) -> dict[str, Any]:
    """The Responses API body for `request` (streaming)."""
    body: dict[str, Any] = {
        "model": model,
        "input": _input_items(request),
        "max_output_tokens": request.max_tokens,
        "stream": True,
    }
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                # Strict mode demands every property be required; our schemas have optionals.
                "strict": False,
            }
            for t in request.tools
        ]
    if request.tool_choice is not None:
        # https://platform.openai.com/docs/api-reference/responses/create#responses-create-tool_choice
        body["tool_choice"] = {"type": "function", "name": request.tool_choice}
    return options.openai(body, responses=True)


class OpenAIResponsesProvider(OpenAIHTTPProvider):
    """Streams the Responses API over plain httpx."""

    name = "openai-responses"
    path = "/responses"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return openai_responses_request_body(request, self.model, self.options)

    def normalizer(self) -> WireNormalizer:
        return OpenAIResponsesNormalizer()
