"""Provider adapters: real wire formats in, one ordered stream of typed blocks out.

- Neutral conversation types (`Message`, `AssistantMessage`, blocks, `ToolSpec`,
  `ModelRequest`) and stream events (`BlockStarted` ... `MessageComplete`).
- Pure incremental normalizers, one per wire format (Anthropic Messages,
  OpenAI Chat Completions, OpenAI Responses), shared by the httpx providers and
  the SDK-backed providers.
- `WireOptions`: a thinking level mapped onto each provider's request fields,
  extra headers (attribution), routing preferences (OpenRouter's `provider`).
- `RetryPolicy`: the httpx providers send a request again after a transient
  failure (429, 5xx, 529, a refused connection, an in-stream overload) that
  came before any event was yielded, with `retry-after` or jittered backoff.
- `ReplayProvider` (recorded cassettes through the real adapters),
  `ScriptedProvider` (a function-driven test double), replay scenarios.

Repairs of malformed streams are recorded in `AssistantMessage.repairs`;
anything beyond repair is a `StreamFormatError` naming the event index.
"""

from __future__ import annotations

from ._anthropic import AnthropicNormalizer, AnthropicProvider, anthropic_request_body
from ._base import Provider, WireNormalizer, complete
from ._cassette import (
    SCENARIO_DIR,
    Cassette,
    Interaction,
    Scenario,
    WireFormat,
    builtin_scenarios,
    detect_wire,
    load_cassette,
    load_scenario,
)
from ._errors import ContextOverflowError
from ._openai_chat import OpenAIChatNormalizer, OpenAIChatProvider, openai_chat_request_body
from ._openai_responses import (
    OpenAIResponsesNormalizer,
    OpenAIResponsesProvider,
    openai_responses_request_body,
)
from ._options import (
    ANTHROPIC_BUDGETS,
    OPENAI_EFFORT,
    THINKING_LEVELS,
    Thinking,
    WireOptions,
    anthropic_thinking_fields,
    check_headers,
    header_problem,
)
from ._replay import ReplayProvider
from ._retry import RetryPolicy
from ._scripted import ScriptedProvider, ScriptFunction
from ._sdk import AnthropicSDKProvider, OpenAIChatSDKProvider, OpenAIResponsesSDKProvider
from ._sse import SSEDecoder, SSEEvent, parse_sse
from ._types import (
    AssistantBlock,
    AssistantMessage,
    Block,
    BlockFinished,
    BlockKind,
    BlockStarted,
    Message,
    MessageComplete,
    ModelRequest,
    RedactedThinkingBlock,
    Role,
    ServerToolBlock,
    StreamEvent,
    StreamRepaired,
    StreamRepairNote,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolArgsDelta,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "ANTHROPIC_BUDGETS",
    "OPENAI_EFFORT",
    "SCENARIO_DIR",
    "THINKING_LEVELS",
    "AnthropicNormalizer",
    "AnthropicProvider",
    "AnthropicSDKProvider",
    "AssistantBlock",
    "AssistantMessage",
    "Block",
    "BlockFinished",
    "BlockKind",
    "BlockStarted",
    "Cassette",
    "ContextOverflowError",
    "Interaction",
    "Message",
    "MessageComplete",
    "ModelRequest",
    "OpenAIChatNormalizer",
    "OpenAIChatProvider",
    "OpenAIChatSDKProvider",
    "OpenAIResponsesNormalizer",
    "OpenAIResponsesProvider",
    "OpenAIResponsesSDKProvider",
    "Provider",
    "RedactedThinkingBlock",
    "ReplayProvider",
    "RetryPolicy",
    "Role",
    "SSEDecoder",
    "SSEEvent",
    "Scenario",
    "ScriptFunction",
    "ScriptedProvider",
    "ServerToolBlock",
    "StreamEvent",
    "StreamRepairNote",
    "StreamRepaired",
    "TextBlock",
    "TextDelta",
    "Thinking",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolArgsDelta",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
    "WireFormat",
    "WireNormalizer",
    "WireOptions",
    "anthropic_request_body",
    "anthropic_thinking_fields",
    "builtin_scenarios",
    "check_headers",
    "complete",
    "detect_wire",
    "header_problem",
    "load_cassette",
    "load_scenario",
    "openai_chat_request_body",
    "openai_responses_request_body",
    "parse_sse",
]
