"""The provider protocol, the normalizer base, and `complete`."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from collections.abc import Mapping
from typing import Any
from typing import ClassVar
from typing import NoReturn
from typing import Protocol
from typing import runtime_checkable

from metis_trace import InputError
from metis_trace import decode_json

from .._errors import ProviderError
from .._errors import StreamFormatError
from ._builder import MessageBuilder
from ._builder import Slot
from ._errors import ContextOverflowError
from ._sse import SSEEvent
from ._types import AssistantMessage
from ._types import MessageComplete
from ._types import ModelRequest
from ._types import StreamEvent


@runtime_checkable
class Provider(Protocol):
    """Anything that turns a request into one ordered stream of block events.

    Every stream ends with exactly one `MessageComplete`, or raises a
    `ProviderError` (a `StreamFormatError` for malformed streams).
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...


async def complete(provider: Provider, request: ModelRequest) -> AssistantMessage:
    """Drain one stream and return its message."""
    message: AssistantMessage | None = None
    async for event in provider.stream(request):
        if message is not None:
            raise StreamFormatError(f"{provider.name}: stream went on after MessageComplete")
        if isinstance(event, MessageComplete):
            message = event.message
    if message is None:
        raise StreamFormatError(f"{provider.name}: stream ended without MessageComplete")
    return message


_OVERFLOW_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "too long for",
)


def looks_like_overflow(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _OVERFLOW_MARKERS)


def base_url_from(explicit: str | None, variable: str, default: str) -> str:
    """The endpoint's base URL: `explicit`, else the environment variable the
    vendors' SDKs read (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`), else `default`.

    A value that is not an http(s) URL is a `ProviderError` naming the variable.
    """
    return configured_base_url(explicit, variable) or default


def configured_base_url(explicit: str | None, variable: str) -> str | None:
    """`explicit`, else the environment variable's value, else None (the
    vendor's own endpoint). Either must be an http(s) URL (`ProviderError`)."""
    value = explicit if explicit is not None else os.environ.get(variable, "").strip()
    if not value:
        return None
    if not value.startswith(("http://", "https://")) or len(value) < 10:
        where = "base URL" if explicit is not None else variable
        raise ProviderError(f"{where}={value!r}: expected an http:// or https:// URL")
    return value


def compact_json(value: Any) -> str:
    """Arguments as the OpenAI APIs write them: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def error_text(payload: Any) -> str:
    """`type: message` out of the error shapes of both vendors."""
    if isinstance(payload, Mapping):
        inner = payload.get("error", payload)
        if isinstance(inner, Mapping):
            kind = inner.get("code") or inner.get("type") or ""
            if kind == "error":  # a bare event `type`, not a reason
                kind = ""
            message = inner.get("message") or ""
            if message or kind:
                return f"{kind}: {message}" if kind and message else str(kind or message)
        elif isinstance(inner, str):
            return inner
    return json.dumps(payload, default=str)


class WireNormalizer:
    """Base of the three pure incremental normalizers.

    `feed(event)` takes one decoded wire event (a JSON object, as sent or as an
    SDK's `to_dict()`), `feed_sse(sse)` one raw SSE event; both return the
    stream events it produced. `finish()` is called at end of input: it returns
    the `MessageComplete` if the wire format allows completing there, or raises
    a `StreamFormatError` saying the stream was truncated.
    """

    provider: ClassVar[str] = "provider"

    def __init__(self) -> None:
        self._b = MessageBuilder(self.provider)
        self._n = -1  # index of the event being handled
        self._type = ""
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    @property
    def events_seen(self) -> int:
        return self._n + 1

    def feed_sse(self, sse: SSEEvent) -> list[StreamEvent]:
        data = sse.data
        if not data:  # an empty `data:` is an event (the SSE standard) with no payload
            return []
        if data == "[DONE]":
            self._n += 1
            self._type = "[DONE]"
            if not self._done:
                self._on_done_marker()
            return self._b.drain()
        try:
            payload = decode_json(data)  # strict JSON (no NaN, bounded depth and numbers)
        except InputError as exc:
            self._n += 1
            self._type = sse.event
            raise self._error(f"data is not valid JSON ({exc.message})") from exc
        if not isinstance(payload, dict):
            self._n += 1
            self._type = sse.event
            raise self._error(f"data is JSON {type(payload).__name__}, not an object")
        return self.feed(payload)

    def feed(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        self._n += 1
        kind = event.get("type")
        self._type = kind if isinstance(kind, str) else str(event.get("object", "?"))
        if not self._done:  # whatever follows a complete message cannot change it
            self._handle(event)
        return self._b.drain()

    def finish(self) -> list[StreamEvent]:
        if not self._done:
            self._on_end()
        return self._b.drain()

    # --- for subclasses ------------------------------------------------------------

    def _handle(self, event: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def _on_done_marker(self) -> None:
        raise self._error("unexpected [DONE]")

    def _on_end(self) -> None:
        raise self._truncated("")

    def _delta(self, slot: Slot, text: str) -> None:
        if not slot.open:
            where = f"block {slot.index}" if slot.index is not None else f"a {slot.kind} block"
            raise self._error(f"delta for {where} after it finished")
        self._b.delta(slot, text)

    def _complete(self, stop_reason: str, usage: Any) -> None:
        self._b.complete(stop_reason, usage)
        self._done = True

    def _where(self) -> str:
        return f"{self.provider} stream event {self._n} ({one_line(self._type, 60)})"

    def _error(self, message: str) -> StreamFormatError:
        return StreamFormatError(f"{self._where()}: {message}")

    def _truncated(self, what: str) -> StreamFormatError:
        open_blocks = ", ".join(
            f"{s.kind} block {s.index}" for s in self._b.open_slots if s.index is not None
        )
        tail = f"; still open: {open_blocks}" if open_blocks else ""
        return StreamFormatError(
            f"{self.provider} stream truncated after {self.events_seen} events: {what}{tail}"
        )

    def _raise_remote(self, payload: Any) -> NoReturn:
        """An error the provider reported inside the stream."""
        text = one_line(error_text(payload))
        cls = ContextOverflowError if looks_like_overflow(text) else ProviderError
        raise cls(f"{self._where()}: provider reported an error: {text}")

    # Typed field access: a wrong type is a format error naming the event.

    def _get_int(self, event: Mapping[str, Any], key: str) -> int:
        value = event.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._error(f"field {key!r} must be an integer, got {value!r}")
        return value

    def _get_map(self, event: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = event.get(key)
        if not isinstance(value, Mapping):
            raise self._error(f"field {key!r} must be an object, got {type(value).__name__}")
        return value

    def _opt_str(self, event: Mapping[str, Any], key: str) -> str:
        value = event.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self._error(f"field {key!r} must be a string, got {type(value).__name__}")
        return value


def usage_int(mapping: Mapping[str, Any] | None, *keys: str) -> int | None:
    """A token count at a nested path, or None if absent or not an integer."""
    value: Any = mapping
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
