"""Thinking levels, extra headers and routing on the wire, for each provider.

Each provider sends a real request through httpx to a transport that answers
with a recorded stream (`corpora/provider-streams`), and the request it sent
is checked field by field against the mapping in `providers/_options.py`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from metis_runtime.providers import ANTHROPIC_BUDGETS
from metis_runtime.providers import OPENAI_EFFORT
from metis_runtime.providers import THINKING_LEVELS
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import OpenAIChatProvider
from metis_runtime.providers import OpenAIResponsesProvider
from metis_runtime.providers import WireOptions
from metis_runtime.providers import anthropic_thinking_fields
from metis_runtime.providers import complete
from metis_runtime.providers import header_problem
from metis_runtime.providers import load_cassette

STREAMS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpora" / "provider-streams"
RECORDED = {
    "anthropic": "anthropic/test_anthropic_model_thinking_part_stream.yaml",
    "openai-chat": "openai-chat/test_run_stream_sync_streams_real_model.yaml",
    "openai-responses": "openai-responses/test_openai_responses_stream.yaml",
}
HEADERS = {"HTTP-Referer": "https://example.org/app", "X-Title": "Example App"}
ROUTING = {"order": ["anthropic", "openai"], "allow_fallbacks": False}


def _recorded(wire: str) -> str:
    path = STREAMS / RECORDED[wire]
    if not path.exists():
        pytest.skip(f"{path}: the shared corpora are not here")
    return load_cassette(path).interactions[0].body


def _send(provider: Any, wire: str) -> httpx.Request:
    sent: list[httpx.Request] = []

    def serve(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=_recorded(wire).encode()
        )

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
            provider._client = http
            await complete(provider, ModelRequest("sys", (Message.user("hi"),), max_tokens=1000))

    asyncio.run(go())
    assert len(sent) == 1
    return sent[0]


@pytest.mark.parametrize("level", THINKING_LEVELS)
@pytest.mark.parametrize("model", ["claude-sonnet-4-0", "claude-sonnet-4-6", "claude-opus-4-7"])
def test_anthropic_thinking_levels(level: str, model: str) -> None:
    options = WireOptions(level, HEADERS, ROUTING)  # type: ignore[arg-type]
    request = _send(AnthropicProvider(model, api_key="k", options=options), "anthropic")
    body = json.loads(request.content)
    assert request.headers["http-referer"] == HEADERS["HTTP-Referer"]
    assert request.headers["x-title"] == "Example App" and request.headers["x-api-key"] == "k"
    assert body["provider"] == ROUTING and body["model"] == model
    if level == "off":
        assert "thinking" not in body and "output_config" not in body
        assert body["max_tokens"] == 1000
    elif model == "claude-sonnet-4-0":
        budget = ANTHROPIC_BUDGETS[level]
        assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
        assert body["max_tokens"] == 1000 + budget > budget >= 1024  # the budget stays below
    else:
        assert body["thinking"] == {"type": "adaptive"} and body["max_tokens"] == 1000
        effort = body["output_config"]["effort"]
        expect = {"minimal": "low", "xhigh": "xhigh" if model.endswith("4-7") else "max"}
        assert effort == expect.get(level, level)


@pytest.mark.parametrize("level", THINKING_LEVELS)
def test_openai_thinking_levels(level: str) -> None:
    options = WireOptions(level, HEADERS, ROUTING)  # type: ignore[arg-type]
    chat = _send(OpenAIChatProvider("gpt-5", api_key="k", options=options), "openai-chat")
    body = json.loads(chat.content)
    assert body["reasoning_effort"] == OPENAI_EFFORT[level] and body["provider"] == ROUTING
    assert chat.headers["authorization"] == "Bearer k" and chat.headers["x-title"] == "Example App"
    responses = _send(
        OpenAIResponsesProvider("gpt-5", api_key="k", options=options), "openai-responses"
    )
    body = json.loads(responses.content)
    assert body["reasoning"] == {"effort": OPENAI_EFFORT[level]}
    assert responses.headers["http-referer"] == HEADERS["HTTP-Referer"]


def test_no_level_sends_no_field() -> None:
    body = json.loads(
        _send(AnthropicProvider("claude-sonnet-4-6", api_key="k"), "anthropic").content
    )
    assert not {"thinking", "output_config", "provider"} & set(body)
    chat = json.loads(_send(OpenAIChatProvider("gpt-4.1", api_key="k"), "openai-chat").content)
    assert not {"reasoning_effort", "reasoning", "provider"} & set(chat)


def test_an_extra_header_cannot_carry_credentials_or_override_the_key() -> None:
    for name in ("Authorization", "x-api-key", "Cookie", "Host"):
        assert header_problem(name, "v") is not None
        with pytest.raises(ValueError):
            WireOptions(headers={name: "v"})
    assert header_problem("X Title", "v") is not None
    assert header_problem("X-Title", "a\r\nInjected: 1") is not None
    assert header_problem("X-Title", "Example") is None


def test_the_model_version_decides_the_anthropic_form() -> None:
    assert (
        "budget_tokens"
        in anthropic_thinking_fields("high", "claude-3-7-sonnet-20250219", 10)["thinking"]
    )
    assert anthropic_thinking_fields("high", "anthropic/claude-opus-4.6", 10)["thinking"] == {
        "type": "adaptive"
    }
    assert anthropic_thinking_fields("low", "claude-sonnet-5", 10)["output_config"] == {
        "effort": "low"
    }
