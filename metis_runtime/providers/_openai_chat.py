"""OpenAI Chat Completions: request body, stream normalizer, httpx provider.

Wire: `chat.completion.chunk` objects; `choices[0].delta` carries `content`
and `tool_calls[]` keyed by `index`, whose id and function name come only on
the first delta of each call; `finish_reason` ends the choice, an optional
usage-only chunk follows, and `data: [DONE]` ends the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import ClassVar

from ._base import WireNormalizer
from ._base import compact_json
from ._base import usage_int
from ._builder import Slot
from ._http import HTTPProvider
from ._options import NO_OPTIONS
from ._options import WireOptions
from ._types import ModelRequest
from ._types import TextBlock
from ._types import ToolResultBlock
from ._types import ToolUseBlock
from ._types import Usage

OPENAI_URL = "https://api.openai.com/v1"

_FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIChatNormalizer(WireNormalizer):
    provider: ClassVar[str] = "openai-chat"

    def __init__(self) -> None:
        super().__init__()
        self._have_id = False
        self._text: Slot | None = None
        self._thinking: Slot | None = None
        self._tools: dict[int, Slot] = {}
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._other_choices = False

    def _handle(self, event: Mapping[str, Any]) -> None:
        if "error" in event and event["error"] is not None:
            self._raise_remote(event)
        if not self._have_id:
            self._have_id = True
            self._b.take_id(
                event.get("id"), "first chunk has no id", "used 'unknown' as the message id"
            )
        choices = event.get("choices") or []
        if not isinstance(choices, list):
            raise self._error("field 'choices' must be a list")
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise self._error("a choice must be an object")
            if choice.get("index", 0) != 0:
                if not self._other_choices:
                    self._other_choices = True
                    self._b.note("stream has more than one choice", "kept choice 0 only")
                continue
            self._choice(choice)
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self._usage = Usage(
                input_tokens=usage_int(usage, "prompt_tokens") or 0,
                output_tokens=usage_int(usage, "completion_tokens") or 0,
                cache_read_tokens=usage_int(usage, "prompt_tokens_details", "cached_tokens") or 0,
            )

    def _choice(self, choice: Mapping[str, Any]) -> None:
        b = self._b
        delta = choice.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise self._error("field 'delta' must be an object")
        # Reasoning text of OpenAI-compatible servers (vLLM, DeepSeek, OpenRouter).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._thinking is None:
                self._close_text()
                self._thinking = b.start_thinking(lazy=True)
            b.delta(self._thinking, reasoning)
        for key in ("content", "refusal"):
            text = delta.get(key)
            if isinstance(text, str) and text:
                if self._thinking is not None:
                    b.finish(self._thinking)
                    self._thinking = None
                if self._text is None:
                    self._text = b.start_text()
                b.delta(self._text, text)
        calls = delta.get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise self._error("field 'tool_calls' must be a list")
            for call in calls:
                self._tool_call(call)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._finish = finish
            self._close_text()
            for index in sorted(self._tools):
                b.finish(self._tools[index])

    def _close_text(self) -> None:
        for slot in (self._thinking, self._text):
            if slot is not None:
                self._b.finish(slot)
        self._thinking = self._text = None

    def _tool_call(self, call: Any) -> None:
        if not isinstance(call, Mapping):
            raise self._error("a tool_calls entry must be an object")
        index = self._get_int(call, "index")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise self._error(f"tool call {index}: field 'function' must be an object")
        slot = self._tools.get(index)
        if slot is None:
            name = self._opt_str(function, "name")
            if not name:
                raise self._error(f"tool call {index} has no function name in its first delta")
            self._close_text()
            slot = self._tools[index] = self._b.start_tool(self._opt_str(call, "id"), name)
        self._delta(slot, self._opt_str(function, "arguments"))

    def _stop_reason(self) -> str:
        if self._finish is None:
            return "tool_use" if self._b.has_tool_use else "end_turn"
        return _FINISH.get(self._finish, self._finish)

    def _on_done_marker(self) -> None:
        if self._finish is None:
            if not self._have_id:
                raise self._error("[DONE] before any chunk")
            self._b.note("stream ended with [DONE] but no finish_reason", "inferred the stop")
        self._complete(self._stop_reason(), self._usage)

    def _on_end(self) -> None:
        # The SDKs swallow [DONE]: a finish_reason is enough to know the answer is whole.
        if self._finish is None:
            raise self._truncated("no finish_reason and no [DONE]")
        self._complete(self._stop_reason(), self._usage)


# --- request -------------------------------------------------------------------------


def _chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Text, tool calls and tool results only: thinking, Anthropic's
    redacted_thinking and server tool blocks have no place in this API."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        texts = [b.text for b in message.content if isinstance(b, TextBlock) and b.text]
        if message.role == "user":
            # Tool messages must directly follow the assistant message that called.
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    tool = {"role": "tool", "tool_call_id": block.tool_use_id}
                    out.append({**tool, "content": block.content})
            if texts:
                out.append({"role": "user", "content": "\n\n".join(texts)})
            continue
        calls = [
            {
                "id": b.id,
                "type": "function",
                "function": {"name": b.name, "arguments": compact_json(b.input)},
            }
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        item: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
        if calls:
            item["tool_calls"] = calls
        out.append(item)
    return out


def openai_chat_request_body(
    request: ModelRequest, model: str, options: WireOptions = NO_OPTIONS
) -> dict[str, Any]:
    """The Chat Completions body for `request` (streaming, with usage)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": _chat_messages(request),
        "max_completion_tokens": request.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    if request.tool_choice is not None:
        # https://platform.openai.com/docs/api-reference/chat/create#chat-create-tool_choice
        body["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
    return options.openai(body, responses=False)


class OpenAIHTTPProvider(HTTPProvider):
    """What both OpenAI wire formats share over plain httpx: the key, the
    endpoint's base and the headers; subclasses name the path, body and normalizer.

    A request that fails transiently (429, 5xx, a refused connection, an
    in-stream `rate_limit_exceeded`) before any event is yielded is sent again
    under `retry` (by default up to 2 retries; see `RetryPolicy`)."""

    name = "openai"
    key_variable = "OPENAI_API_KEY"
    url_variable = "OPENAI_BASE_URL"
    default_url = OPENAI_URL

    def headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}", "accept": "text/event-stream"}


class OpenAIChatProvider(OpenAIHTTPProvider):
    """Streams Chat Completions over plain httpx (OpenAI or a compatible server)."""

    name = "openai-chat"
    path = "/chat/completions"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return openai_chat_request_body(request, self.model, self.options)

    def normalizer(self) -> WireNormalizer:
        return OpenAIChatNormalizer()
