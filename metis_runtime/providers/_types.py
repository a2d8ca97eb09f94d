"""Neutral conversation types and stream events.

Small frozen records with a `kind` discriminator (pydantic-ai `messages.py`
style), shared by every provider adapter. They are pydantic dataclasses so
they can be built positionally (`TextBlock("hi")`) and still be validated and
(de)serialized: `pydantic.TypeAdapter(AssistantMessage).dump_json(msg)`.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import ConfigDict
from pydantic import Field
from pydantic.dataclasses import dataclass

_CONFIG = ConfigDict(extra="forbid")

BlockKind = Literal["text", "thinking", "redacted_thinking", "tool_use", "server_tool"]
Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True, config=_CONFIG)
class TextBlock:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ThinkingBlock:
    thinking: str
    signature: str = ""
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class RedactedThinkingBlock:
    """Thinking the provider encrypted (Anthropic `redacted_thinking`).

    `data` is opaque: it is sent back unchanged, like a thinking block's
    signature, so the provider can verify the turn it continues.
    """

    data: str
    kind: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ServerToolBlock:
    """A block of a tool the provider runs itself (Anthropic `server_tool_use`,
    `web_search_tool_result`, `mcp_tool_use`, `*_tool_result`, ...), or one it
    made of the conversation (Anthropic `compaction`).

    `raw` is the wire block as received, its streamed input joined into
    `input`; it goes back verbatim to the provider it came from. It is never a
    call of ours: the provider already ran it, so it gets no tool result.
    """

    raw: dict[str, Any]
    kind: Literal["server_tool"] = "server_tool"

    @property
    def block_type(self) -> str:
        """The wire type, e.g. `server_tool_use` or `web_search_tool_result`."""
        value = self.raw.get("type")
        return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ToolUseBlock:
    """A call the model asked us to run.

    `input_error` is set (and `input` is `{}`) when the streamed arguments
    were not a JSON object: the loop must answer the call with an error
    result instead of running the tool with made-up arguments.

    `wire` is the provider's own item when the call came as one the client
    executes other than a function call (OpenAI Responses `local_shell_call`,
    `shell_call`, `apply_patch_call`, `custom_tool_call`, `tool_search_call`):
    it goes back verbatim, and its result as that item's `*_output`.
    """

    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    input_error: str | None = None
    kind: Literal["tool_use"] = "tool_use"
    wire: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


Block = Annotated[
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ServerToolBlock
    | ToolResultBlock,
    Field(discriminator="kind"),
]
AssistantBlock = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ServerToolBlock,
    Field(discriminator="kind"),
]
# Blocks only an assistant message may hold.
_ASSISTANT_ONLY = (ThinkingBlock, RedactedThinkingBlock, ToolUseBlock, ServerToolBlock)


@dataclass(frozen=True, slots=True, config=_CONFIG)
class Message:
    """One turn of the conversation as we send it back to a provider."""

    role: Role
    content: tuple[Block, ...]

    def __post_init__(self) -> None:
        # Every wire format rejects these, so refuse them where they are built.
        for block in self.content:
            if self.role == "user" and isinstance(block, _ASSISTANT_ONLY):
                raise ValueError(f"a user message cannot hold a {block.kind} block")
            if self.role == "assistant" and isinstance(block, ToolResultBlock):
                raise ValueError("an assistant message cannot hold a tool_result block")

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))


@dataclass(frozen=True, slots=True, config=_CONFIG)
class StreamRepairNote:
    """A malformed stream that was normalized instead of rejected."""

    problem: str
    repair: str


@dataclass(frozen=True, slots=True, config=_CONFIG)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True, config=_CONFIG)
class AssistantMessage:
    """One complete model answer.

    `stop_reason` uses the Anthropic vocabulary for every provider:
    end_turn, tool_use, max_tokens, stop_sequence, pause_turn, refusal;
    values no adapter knows are passed through unchanged.
    """

    message_id: str
    blocks: tuple[AssistantBlock, ...]
    stop_reason: str
    usage: Usage | None = None
    repairs: tuple[StreamRepairNote, ...] = ()

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        """The calls we must run and answer; server tool blocks are not among them."""
        return tuple(b for b in self.blocks if isinstance(b, ToolUseBlock))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    def to_message(self) -> Message:
        return Message("assistant", tuple(self.blocks))


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ModelRequest:
    """`tool_choice`: the name of a tool the answer must call (structured output,
    as the plan engine asks for its framework), or None to let the model choose."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096
    tool_choice: str | None = None


# --- stream events ------------------------------------------------------------
# `index` is the block's position in the final `AssistantMessage.blocks`, not the
# provider's wire index: skipped blocks (empty text, unknown types) leave no gap.
# Opaque blocks (redacted_thinking, server_tool) start and finish with no deltas
# in between: a server tool's streamed input is not a `ToolArgsDelta` of ours.


@dataclass(frozen=True, slots=True, config=_CONFIG)
class BlockStarted:
    index: int
    block_kind: BlockKind
    tool_use_id: str = ""  # tool_use only: known at start in every wire format
    tool_name: str = ""
    kind: Literal["block_started"] = "block_started"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class TextDelta:
    index: int
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ThinkingDelta:
    index: int
    text: str
    kind: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class ToolArgsDelta:
    index: int
    partial_json: str
    kind: Literal["tool_args_delta"] = "tool_args_delta"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class BlockFinished:
    index: int
    block: AssistantBlock
    kind: Literal["block_finished"] = "block_finished"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class StreamRepaired:
    note: StreamRepairNote
    kind: Literal["stream_repaired"] = "stream_repaired"


@dataclass(frozen=True, slots=True, config=_CONFIG)
class MessageComplete:
    message: AssistantMessage
    kind: Literal["message_complete"] = "message_complete"


StreamEvent = Annotated[
    BlockStarted
    | TextDelta
    | ThinkingDelta
    | ToolArgsDelta
    | BlockFinished
    | StreamRepaired
    | MessageComplete,
    Field(discriminator="kind"),
]
