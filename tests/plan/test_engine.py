"""The engine's proposer: structured output through the real wire adapters."""

from __future__ import annotations

import asyncio

import pytest

from metis_runtime.plan._catalog import Catalog
from metis_runtime.plan._engine import PROPOSE_TOOL
from metis_runtime.plan._engine import ProposalError
from metis_runtime.plan._engine import Proposer
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolSpec
from metis_runtime.providers import openai_chat_request_body
from metis_runtime.providers import openai_responses_request_body
from metis_runtime.tools import ToolRegistry
from metis_trace import ErrorClass

from ._runtime import replay


def _proposer(provider: object) -> Proposer:
    catalog = Catalog(ToolRegistry.builtin())
    return Proposer(provider, catalog.executors(), {}, 8)  # type: ignore[arg-type]


def test_the_replayed_proposal_is_a_framework_and_the_tool_is_forced() -> None:
    provider = replay()
    framework = asyncio.run(_proposer(provider).propose("Summarize my notes"))
    assert [s.tool for s in framework.steps] == [
        "find_notes",
        "read_notes",
        "create_summary",
        "final_answer",
    ]
    sent = provider.sent[0]
    # https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#forcing-tool-use
    assert sent["tool_choice"] == {"type": "tool", "name": PROPOSE_TOOL}
    assert sent["tools"][0]["name"] == PROPOSE_TOOL and "Catalog:" in sent["system"]


def test_openai_bodies_force_the_tool_too() -> None:
    request = ModelRequest(
        system="s",
        messages=(Message.user("x"),),
        tools=(ToolSpec(PROPOSE_TOOL, "d", {"type": "object"}),),
        tool_choice=PROPOSE_TOOL,
    )
    chat = openai_chat_request_body(request, "gpt-4.1")
    assert chat["tool_choice"] == {"type": "function", "function": {"name": PROPOSE_TOOL}}
    responses = openai_responses_request_body(request, "gpt-4.1")
    assert responses["tool_choice"] == {"type": "function", "name": PROPOSE_TOOL}
    plain = openai_chat_request_body(ModelRequest(system="s", messages=(Message.user("x"),)), "m")
    assert "tool_choice" not in plain


def test_no_framework_is_structural_and_a_provider_failure_operational() -> None:
    text_only = ScriptedProvider([[TextBlock("I would rather chat.")]])
    with pytest.raises(ProposalError) as info:
        asyncio.run(_proposer(text_only).propose("x"))
    assert info.value.cls is ErrorClass.WRONG_ARGS
    malformed = ScriptedProvider(
        [
            [
                __import__("metis_runtime.providers", fromlist=["ToolUseBlock"]).ToolUseBlock(
                    id="t", name=PROPOSE_TOOL, input={"steps": "all"}
                )
            ]
        ]
    )
    with pytest.raises(ProposalError, match="malformed: steps"):
        asyncio.run(_proposer(malformed).propose("x"))
    exhausted = ScriptedProvider([])
    with pytest.raises(ProposalError) as failed:
        asyncio.run(_proposer(exhausted).propose("x"))
    assert failed.value.cls is ErrorClass.OPERATIONAL
