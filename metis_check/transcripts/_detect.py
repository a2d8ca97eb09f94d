"""`--format auto`: which transcript format an input is, from its first records.

Each format has a shape no other has: a Claude Code line threads by
`uuid`/`parentUuid` and names its `sessionId`; an Anthropic body or message
uses typed content blocks (`tool_use`, `tool_result`) and, as a body,
`max_tokens`; a Chat message has `tool_calls` or `role: "tool"`; a Responses
body has `input`, a response `object: "response"`. Only the first few records
are looked at, so detection costs little on a large file. An input that shows
none of these is refused: its format must be named.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from metis_trace import InputError
from metis_trace import TranscriptFormatError
from metis_trace import raw_decode_json

from ._claude_code import KNOWN_TYPES
from ._codex import ROLLOUT_KINDS

_LOOK = 20  # records looked at
_CC_KEYS = ("parentUuid", "sessionId", "leafUuid")  # leafUuid: a `summary` line


def _first_values(text: str, limit: int) -> list[Any]:
    """Up to `limit` top-level JSON values from the start of `text` (fewer if one is cut)."""
    values: list[Any] = []
    pos = 0
    while len(values) < limit:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = raw_decode_json(text, pos)
        except InputError:
            break  # the reader will say what is wrong, and where
        values.append(value)
    return values


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _message_format(messages: Iterable[Any]) -> str | None:
    """anthropic or openai-chat, from what a list of messages holds."""
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" or "tool_calls" in message:
            return "openai-chat"
        if message.get("role") in ("system", "developer") and isinstance(
            message.get("content"), str
        ):
            return "openai-chat"
        for block in _blocks(message):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in ("tool_use", "tool_result", "thinking", "server_tool_use"):
                return "anthropic"
            if kind in ("input_text", "output_text", "function_call"):
                return "openai-responses"
    return None


def _is_responses_item(value: Any) -> bool:
    from ._blocks import responses_role

    return isinstance(value, dict) and "type" in value and responses_role(value) is not None


def _of_value(value: Any) -> str | None:
    if (
        isinstance(value, list)
        and value
        and isinstance(value[0], dict)
        and value[0].get("kind") in ("request", "response")
        and "parts" in value[0]
    ):
        return "pydantic-ai"
    if isinstance(value, list) and value and isinstance(value[0], dict) and "raw_item" in value[0]:
        return "openai-agents"
    if isinstance(value, list):
        if value and all(_is_responses_item(v) and v.get("type") != "message" for v in value[:1]):
            return "openai-responses"
        return _message_format(value) or (
            "openai-responses" if any(_is_responses_item(v) for v in value[:_LOOK]) else None
        )
    if not isinstance(value, dict):
        return None
    if "resourceSpans" in value:
        return "otel"
    if "generated_items" in value or "raw_item" in value:
        return "openai-agents"
    if "input" in value:
        return "openai-responses"
    if value.get("object") == "response":
        return "openai-responses"
    if value.get("object") in ("chat.completion", "chat.completion.chunk"):
        return "openai-chat"
    if value.get("type") == "message" and value.get("role") == "assistant":
        return "anthropic"
    if "messages" in value:
        found = _message_format(value["messages"] if isinstance(value["messages"], list) else [])
        if found:
            return found
        # Only text: the readers agree on it. Anthropic requires max_tokens and a
        # top-level system prompt; Chat puts the system prompt in a message.
        return "anthropic" if "max_tokens" in value or "system" in value else "openai-chat"
    if "role" in value:
        return _message_format([value])
    if _is_responses_item(value):
        return "openai-responses"
    return None


def detect_format(lines: Iterable[str] | str, source: str = "") -> tuple[str, str]:
    """The input's format, and why: `("claude-code", "lines thread by uuid/parentUuid")`.

    Raises `TranscriptFormatError` when no format fits.
    """
    text = lines if isinstance(lines, str) else "\n".join(line.rstrip("\r\n") for line in lines)
    values = _first_values(text, _LOOK)
    if not values:
        raise TranscriptFormatError(1, "cannot tell the format: no JSON value at the start", source)
    records = [v for v in values if isinstance(v, dict)]
    if any(r.get("type") in KNOWN_TYPES and any(k in r for k in _CC_KEYS) for r in records):
        return "claude-code", "lines that thread by uuid/parentUuid and name a sessionId"
    if any(r.get("type") in ROLLOUT_KINDS and "payload" in r for r in records):
        return "codex", "rollout lines: timestamp, type, payload"
    found = None
    for value in values:
        found = _of_value(value)
        if found:
            break
    if found is None and len(values) > 1:
        found = _message_format(values)
    if found is None:
        raise TranscriptFormatError(
            1, "cannot tell the format of this input: name it with --format", source
        )
    why = {
        "anthropic": "Messages API messages (typed content blocks)",
        "openai-chat": "Chat Completions messages (tool_calls / role tool)",
        "openai-responses": "Responses API items",
        "pydantic-ai": "ModelMessagesTypeAdapter messages (kind, parts)",
        "otel": "OTLP JSON spans (resourceSpans)",
        "openai-agents": "Agents SDK run items (raw_item)",
    }[found]
    return found, why
