"""What a caller adds to every request beyond the conversation (`WireOptions`).

- **Thinking level** (`off`, `minimal`, `low`, `medium`, `high`, `xhigh`; the
  multi-agent page's levels) mapped onto each provider's request fields:

  | level | Anthropic, budget | Anthropic, adaptive | OpenAI effort |
  |---|---|---|---|
  | off | (no `thinking`) | (no `thinking`) | `none` |
  | minimal | `budget_tokens` 1024 | effort `low` | `minimal` |
  | low | 2048 | `low` | `low` |
  | medium | 8192 | `medium` | `medium` |
  | high | 16384 | `high` | `high` |
  | xhigh | 32768 | `xhigh` (Opus 4.7 on), `max` (4.6) | `xhigh` |

  Anthropic: `thinking: {type: enabled, budget_tokens: N}` with `max_tokens`
  raised by N, since the budget counts towards it and must stay below it
  (https://docs.claude.com/en/docs/build-with-claude/extended-thinking;
  1024 is the API's minimum); models 4.6 and later take adaptive thinking,
  `thinking: {type: adaptive}` with `output_config: {effort}` (Opus 4.7 and
  later refuse the budget form; effort levels low, medium, high, xhigh, max:
  https://platform.claude.com/docs/en/build-with-claude/effort). OpenAI: Chat
  Completions `reasoning_effort`, Responses `reasoning: {effort}` (none,
  minimal, low, medium, high, xhigh: https://platform.openai.com/docs/api-reference/responses/create).
  Which values a model accepts is the provider's to say; metis sends the
  level's field and reports the provider's refusal. No level: no field.
- **Extra headers**, such as OpenRouter's attribution headers `HTTP-Referer`
  and `X-Title` (https://openrouter.ai/docs/features/app-attribution).
  Credentials never travel this way (they come from the environment).
- **Routing preferences**: OpenRouter's provider-routing object, sent as the
  request's `provider` field (`order`, `only`, `ignore`, `allow_fallbacks`,
  `sort`, ...: https://openrouter.ai/docs/guides/routing/provider-selection).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from typing import Literal
from typing import get_args

from attrs import field
from attrs import frozen

Thinking = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[str, ...] = get_args(Thinking)

ANTHROPIC_BUDGETS: Mapping[str, int] = MappingProxyType(
    {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
)
_ADAPTIVE_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
OPENAI_EFFORT: Mapping[str, str] = MappingProxyType(
    {"off": "none", **{level: level for level in THINKING_LEVELS if level != "off"}}
)

# claude-opus-4-6, claude-sonnet-4-6-20260101, anthropic/claude-opus-4.7, claude-sonnet-5
_CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:[.-](\d{1,2})(?!\d))?")
# Headers that carry credentials or that the transport sets itself.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "anthropic-version",
    }
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 field-name


def claude_version(model: str) -> tuple[int, int] | None:
    """(major, minor) of a Claude model id of the 4.x naming, else None."""
    found = _CLAUDE_VERSION.search(model)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def anthropic_thinking_fields(level: str, model: str, max_tokens: int) -> dict[str, Any]:
    """The Messages body fields a thinking level sets (possibly `max_tokens`)."""
    if level == "off":
        return {}
    version = claude_version(model)
    if version is not None and version >= (4, 6):
        if level == "xhigh":
            effort = "xhigh" if version >= (4, 7) else "max"
        else:
            effort = _ADAPTIVE_EFFORT[level]
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    budget = ANTHROPIC_BUDGETS[level]
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": max_tokens + budget,
    }


def header_problem(name: str, value: str) -> str | None:
    """Why an extra header may not be sent (None: it may)."""
    if not _TOKEN.match(name):
        return f"{name!r} is not a header name"
    if name.lower() in _RESERVED_HEADERS:
        # Not "NAME: ..." (the redactor would read it as that header's value).
        return f"{name!r} is set by metis, not an extra header (keys come from the environment)"
    if any(c in value for c in "\r\n\0"):
        return f"{name!r}: the value holds a line break"
    return None


def check_headers(headers: Mapping[str, str]) -> None:
    """ValueError with the first header's `header_problem`, if one has any."""
    for name, text in headers.items():
        problem = header_problem(name, text)
        if problem is not None:
            raise ValueError(problem)


def _frozen_headers(value: Mapping[str, str]) -> Mapping[str, str]:
    check_headers(value)
    return MappingProxyType(dict(value))


@frozen
class WireOptions:
    """A thinking level, extra headers and routing preferences for every request."""

    thinking: Thinking | None = None
    headers: Mapping[str, str] = field(factory=dict, converter=_frozen_headers)
    routing: Mapping[str, Any] | None = None

    def __attrs_post_init__(self) -> None:
        if self.thinking is not None and self.thinking not in THINKING_LEVELS:
            raise ValueError(f"thinking {self.thinking!r}: one of {', '.join(THINKING_LEVELS)}")

    def anthropic(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """`body` with this thinking level and routing applied (Messages API)."""
        if self.thinking is not None:
            body.update(anthropic_thinking_fields(self.thinking, model, int(body["max_tokens"])))
        return self._routed(body)

    def openai(self, body: dict[str, Any], *, responses: bool) -> dict[str, Any]:
        """`body` with this thinking level and routing applied (Chat or Responses)."""
        if self.thinking is not None:
            effort = OPENAI_EFFORT[self.thinking]
            if responses:
                body["reasoning"] = {"effort": effort}
            else:
                body["reasoning_effort"] = effort
        return self._routed(body)

    def _routed(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.routing:
            body["provider"] = dict(self.routing)
        return body


NO_OPTIONS = WireOptions()
