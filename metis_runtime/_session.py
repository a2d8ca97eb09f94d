"""The conversation as the provider sees it: a list of neutral messages.

The loop appends the user task, each assistant message, and each batch's
results (one `tool_result` per occurrence, in call order, then any notes).
Messages round-trip through JSON for the journal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic import ValidationError

from ._errors import JournalError
from .providers import Message
from .providers import ModelRequest
from .providers import RedactedThinkingBlock
from .providers import TextBlock
from .providers import ThinkingBlock
from .providers import ToolResultBlock
from .providers import ToolSpec
from .providers import ToolUseBlock

_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def message_to_json(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = _MESSAGE.dump_python(message, mode="json")
    return data


def message_from_json(obj: Any, where: str = "journal") -> Message:
    """A message from its decoded JSON, strictly (validated as JSON text: no
    coercion, while a string still names a literal and an array fills a tuple)."""
    try:
        return _MESSAGE.validate_json(json.dumps(obj), strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "message"
        raise JournalError(f"{where}: {loc}: {err['msg']}") from exc


def _token(block: object) -> str:
    if isinstance(block, ToolUseBlock):
        return f"call:{block.id}"
    if isinstance(block, ToolResultBlock):
        return f"result:{block.tool_use_id}"
    if isinstance(block, ThinkingBlock | RedactedThinkingBlock):
        return "thinking"
    return "text"  # text, and a provider's own server-tool blocks (never our calls)


def message_shapes(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """What a trace's `compaction` event records of a transcript (CLOSE-8):
    per message its role and blocks, `call:<id>` / `result:<id>` for tool
    calls and results, `thinking`, and `text` for anything else."""
    return [{"role": m.role, "blocks": [_token(b) for b in m.content]} for m in messages]


def result_ids(message: Message) -> list[str]:
    """The call ids a results message holds, in its order (CLOSE-3/4)."""
    return [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]


def results_message(results: Sequence[tuple[str, str, bool]], notes: Sequence[str] = ()) -> Message:
    """One user message: `(call_id, content, is_error)` per occurrence in call
    order, then text notes (tool results must come first for Anthropic)."""
    blocks: list[ToolResultBlock | TextBlock] = [
        ToolResultBlock(call_id, content, is_error) for call_id, content, is_error in results
    ]
    blocks.extend(TextBlock(n) for n in notes)
    return Message("user", tuple(blocks))


class Session:
    """The message history of one run."""

    __slots__ = ("messages",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = list(messages)

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def request(
        self, system: str, tools: Sequence[ToolSpec], max_tokens: int = 4096
    ) -> ModelRequest:
        return ModelRequest(system, tuple(self.messages), tuple(tools), max_tokens)

    def __len__(self) -> int:
        return len(self.messages)
