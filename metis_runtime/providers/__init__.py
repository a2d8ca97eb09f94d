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

from ._anthropic import AnthropicNormalizer
from ._anthropic import AnthropicProvider
from ._anthropic import anthropic_request_body
from ._base import Provider
from ._base import WireNormalizer
from ._base import complete
from ._cassette import SCENARIO_DIR
from ._cassette import Cassette
from ._cassette import Interaction
from ._cassette import Scenario
from ._cassette import WireFormat
from ._cassette import builtin_scenarios
from ._cassette import detect_wire
from ._cassette import load_cassette
from ._cassette import load_scenario
from ._errors import ContextOverflowError
from ._openai_chat import OpenAIChatNormalizer
from ._openai_chat import OpenAIChatProvider
from ._openai_chat import openai_chat_request_body
from ._openai_responses import OpenAIResponsesNormalizer
from ._openai_responses import OpenAIResponsesProvider
from ._openai_responses import openai_responses_request_body
from ._options import ANTHROPIC_BUDGETS
from ._options import OPENAI_EFFORT
from ._options import THINKING_LEVELS
from ._options import Thinking
from ._options import WireOptions
from ._options import anthropic_thinking_fields
from ._options import check_headers
from ._options import header_problem
from ._replay import ReplayProvider
from ._retry import RetryPolicy
from ._scripted import ScriptedProvider
from ._scripted import ScriptFunction
from ._sdk import AnthropicSDKProvider
from ._sdk import OpenAIChatSDKProvider
from ._sdk import OpenAIResponsesSDKProvider
from ._sse import SSEDecoder
from ._sse import SSEEvent
from ._sse import parse_sse
from ._types import AssistantBlock
from ._types import AssistantMessage
from ._types import Block
from ._types import BlockFinished
from ._types import BlockKind
from ._types import BlockStarted
from ._types import Message
from ._types import MessageComplete
from ._types import ModelRequest
from ._types import RedactedThinkingBlock
from ._types import Role
from ._types import ServerToolBlock
from ._types import StreamEvent
from ._types import StreamRepaired
from ._types import StreamRepairNote
from ._types import TextBlock
from ._types import TextDelta
from ._types import ThinkingBlock
from ._types import ThinkingDelta
from ._types import ToolArgsDelta
from ._types import ToolResultBlock
from ._types import ToolSpec
from ._types import ToolUseBlock
from ._types import Usage

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
