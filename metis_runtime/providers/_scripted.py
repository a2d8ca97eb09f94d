"""A function-driven provider for tests (like pydantic-ai's FunctionModel)."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from typing import Union

from .._errors import ProviderError
from ._types import AssistantBlock
from ._types import AssistantMessage
from ._types import BlockFinished
from ._types import BlockStarted
from ._types import MessageComplete
from ._types import ModelRequest
from ._types import RedactedThinkingBlock
from ._types import ServerToolBlock
from ._types import StreamEvent
from ._types import StreamRepaired
from ._types import TextBlock
from ._types import TextDelta
from ._types import ThinkingBlock
from ._types import ThinkingDelta
from ._types import ToolArgsDelta
from ._types import ToolUseBlock

Turn = Union[AssistantMessage, Sequence[AssistantBlock]]  # noqa: UP007 - a runtime alias
_ANSWER_BLOCKS = (TextBlock, ThinkingBlock, RedactedThinkingBlock, ToolUseBlock, ServerToolBlock)
ScriptFunction = Callable[[ModelRequest, int], Union[Turn, Awaitable[Turn]]]  # noqa: UP007


class ScriptedProvider:
    """Answers turn `n` with `script(request, n)` or with `script[n]`.

    A turn is an `AssistantMessage` (sent as is, repairs included) or a
    sequence of blocks (message id `scripted-<n>`, stop reason `tool_use` if
    there is a call, else `end_turn`). The function may be async. Every block
    is streamed as start, deltas (`chunk_size` characters each; 0 = one delta)
    and finish, then `MessageComplete`. Requests are kept in `requests`.
    """

    def __init__(
        self,
        script: ScriptFunction | Sequence[Turn],
        *,
        name: str = "scripted",
        chunk_size: int = 0,
    ) -> None:
        self.name = name
        self.requests: list[ModelRequest] = []
        self._script = script
        self._chunk = chunk_size

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        turn = len(self.requests)
        self.requests.append(request)
        return self._play(request, turn)

    async def _turn(self, request: ModelRequest, turn: int) -> AssistantMessage:
        script = self._script
        if callable(script):
            result = script(request, turn)
            answer: object = await result if inspect.isawaitable(result) else result
        elif turn < len(script):
            answer = script[turn]
        else:
            raise ProviderError(
                f"{self.name}: no scripted answer for turn {turn} (script has {len(script)})"
            )
        if isinstance(answer, AssistantMessage):
            return answer
        if isinstance(answer, Sequence) and not isinstance(answer, str | bytes):
            blocks = tuple(answer)
            for block in blocks:
                if not isinstance(block, _ANSWER_BLOCKS):
                    raise TypeError(
                        f"{self.name}: turn {turn} holds a {type(block).__name__}; "
                        "an answer holds text, thinking, redacted_thinking, tool_use "
                        "and server_tool blocks only"
                    )
            stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
            return AssistantMessage(f"scripted-{turn}", blocks, stop)
        raise TypeError(
            f"{self.name}: turn {turn} answered {type(answer).__name__}, "
            "expected an AssistantMessage or a sequence of blocks"
        )

    def _pieces(self, text: str) -> list[str]:
        if not text:
            return []
        size = self._chunk
        if size <= 0:
            return [text]
        return [text[i : i + size] for i in range(0, len(text), size)]

    async def _play(self, request: ModelRequest, turn: int) -> AsyncIterator[StreamEvent]:
        message = await self._turn(request, turn)
        for note in message.repairs:
            yield StreamRepaired(note)
        for index, block in enumerate(message.blocks):
            if isinstance(block, ToolUseBlock):
                yield BlockStarted(index, "tool_use", block.id, block.name)
                for piece in self._pieces(json.dumps(block.input)):
                    yield ToolArgsDelta(index, piece)
            elif isinstance(block, ThinkingBlock):
                yield BlockStarted(index, "thinking")
                for piece in self._pieces(block.thinking):
                    yield ThinkingDelta(index, piece)
            elif isinstance(block, RedactedThinkingBlock | ServerToolBlock):
                yield BlockStarted(index, block.kind)  # opaque: no deltas
            else:
                yield BlockStarted(index, "text")
                for piece in self._pieces(block.text):
                    yield TextDelta(index, piece)
            yield BlockFinished(index, block)
        yield MessageComplete(message)
