"""A definition resolved against a parent: tools, mode, provider, workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime.agents import AGENT_TOOL_NAMES
from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import ParentContext
from metis_runtime.agents import ProviderConfig
from metis_runtime.agents import ResolvedAgent
from metis_runtime.agents import ResolveRefusal
from metis_runtime.agents import child_provider
from metis_runtime.agents import definition_mode
from metis_runtime.agents import map_tools
from metis_runtime.agents import resolve_agent
from metis_runtime.permissions import mode_at_most
from metis_trace import Mode

BASE_TOOLS = ("read", "write", "edit", "ls", "glob", "grep", "bash")
PARENT_TOOLS = (*BASE_TOOLS, *AGENT_TOOL_NAMES)


def _d(**fields: Any) -> AgentDefinition:
    return AgentDefinition.model_validate({"name": "x", "description": "d", **fields})


def _parent(mode: Mode = Mode.DEFAULT, **provider: Any) -> ParentContext:
    cfg = ProviderConfig.model_validate(
        {"kind": "anthropic", "model": "claude-sonnet-4-5", **provider}
    )
    return ParentContext(mode, PARENT_TOOLS, cfg, Path("/nonexistent-workspace"))


def _resolve(d: AgentDefinition, parent: ParentContext | None = None, **call: Any) -> ResolvedAgent:
    got = resolve_agent(d, parent or _parent(), **call)
    assert isinstance(got, ResolvedAgent), got
    return got


# --- tools ---------------------------------------------------------------------


def test_claude_code_tool_names_map_onto_metis_tools() -> None:
    got = map_tools(["Read", "MultiEdit", "LS", "Bash", "WebFetch", "mcp__github__get_issue"])
    assert got.tools == ("read", "edit", "ls", "bash", "mcp__github__get_issue")
    assert got.unmapped == ("WebFetch",) and got.spawnable is None
    agent = map_tools(["Agent(worker, researcher)", "Task(planner)", "Edit"])
    assert agent.spawnable == ("planner", "researcher", "worker")
    assert set(agent.tools) == {
        "spawn_agent",
        "list_agents",
        "wait_agent",
        "edit",
        "integrate_agent",
    }
    assert map_tools(["Agent"]).tools == ("spawn_agent", "list_agents", "wait_agent")


def test_tools_narrow_and_denials_remove() -> None:
    r = _resolve(_d(tools="Read, Grep, Bash, WebSearch", disallowedTools=["Bash"]))
    assert r.tools == ("grep", "read") and r.not_available == ("bash", "WebSearch")
    assert _resolve(_d()).tools == tuple(sorted(PARENT_TOOLS))  # no `tools`: the parent's
    assert _resolve(_d(tools=[])).tools == ()
    denied = _resolve(_d(disallowedTools="Agent, Write"))
    assert not set(AGENT_TOOL_NAMES) & set(denied.tools) and "write" not in denied.tools
    call = _resolve(_d(tools="Read, Write"), call_tools=["write", "bash"], tree_deny=["read"])
    assert call.tools == ("write",)


def test_a_denial_with_a_specifier_becomes_a_deny_rule() -> None:
    r = _resolve(_d(disallowedTools=["Bash(rm:*)", "Write"]))
    assert r.deny_rules == ("Bash(rm:*)",) and "bash" in r.tools and "write" not in r.tools
    allow = _resolve(_d(tools="Bash(git diff:*)"))
    assert allow.tools == ("bash",) and "not enforced" in allow.notes[0]


def test_a_plan_child_loses_spawning_and_mode_tools() -> None:
    r = _resolve(_d(permissionMode="plan"))
    assert r.mode is Mode.PLAN and "spawn_agent" not in r.tools
    assert "spawn_agent" not in _resolve(_d(), _parent(Mode.PLAN)).tools


# --- mode ----------------------------------------------------------------------


@pytest.mark.parametrize("parent", list(Mode))
@pytest.mark.parametrize(
    "written", ["default", "acceptEdits", "auto", "dontAsk", "bypassPermissions", "plan", "manual"]
)
def test_a_definitions_mode_is_never_more_permissive_than_the_parents(
    parent: Mode, written: str
) -> None:
    mode, note = definition_mode(parent, _d(permissionMode=written))
    assert mode_at_most(mode, parent)
    wanted = _d(permissionMode=written).mode
    assert wanted is not None
    if parent is Mode.PLAN:
        assert mode is Mode.PLAN
    elif mode_at_most(wanted, parent):
        assert mode is wanted
    else:
        assert mode is parent and "more permissive" in note


def test_a_call_may_only_narrow_a_definitions_mode() -> None:
    d = _d(permissionMode="default")
    parent = _parent(Mode.BYPASS)
    assert _resolve(d, parent, call_mode=Mode.PLAN).mode is Mode.PLAN
    refused = resolve_agent(d, parent, call_mode=Mode.ACCEPT_EDITS)
    assert isinstance(refused, ResolveRefusal) and refused.code == "AUTHORITY"
    # Without a definition mode the call's request goes to the gate's clone (it refuses there).
    assert _resolve(_d(), parent, call_mode=Mode.ACCEPT_EDITS).mode is Mode.ACCEPT_EDITS


# --- provider --------------------------------------------------------------------


def _provider(d: AgentDefinition, mode: Mode = Mode.DEFAULT, **parent: Any) -> tuple[Any, ...]:
    cfg = ProviderConfig.model_validate(
        {"kind": "anthropic", "model": "claude-sonnet-4-5", **parent}
    )
    return child_provider(cfg, d, mode)


OPENROUTER = {
    "kind": "openai",
    "model": "anthropic/claude-sonnet-4.5",
    "base_url": "https://openrouter.ai/api/v1",
    "headers": {"HTTP-Referer": "https://example.org", "X-Title": "Example"},
    "routing": {"order": ["anthropic"], "allow_fallbacks": False},
    "thinking": "high",
}


@pytest.mark.parametrize(
    ("model", "parent", "expect", "model_source"),
    [
        (None, {}, ("anthropic", "claude-sonnet-4-5"), "parent"),
        ("inherit", {}, ("anthropic", "claude-sonnet-4-5"), "parent"),
        ("haiku", {}, ("anthropic", "claude-haiku-4-5"), "frontmatter"),
        ("claude-opus-4-1", {}, ("anthropic", "claude-opus-4-1"), "frontmatter"),
        ("anthropic/claude-3-7-sonnet", {}, ("anthropic", "claude-3-7-sonnet"), "frontmatter"),
        ("openai/gpt-4o", {}, ("openai", "gpt-4o"), "frontmatter"),
        # Behind a router the whole string is the router's model id.
        ("openai/gpt-4o", OPENROUTER, ("openai", "openai/gpt-4o"), "frontmatter"),
        # An alias is Anthropic's: another provider keeps the parent's model.
        ("sonnet", OPENROUTER, ("openai", "anthropic/claude-sonnet-4.5"), "parent"),
    ],
)
def test_the_models_precedence(
    model: str | None, parent: dict[str, Any], expect: tuple[str, str], model_source: str
) -> None:
    child, sources, _ = _provider(_d(model=model), **parent)
    assert (child.kind, child.model) == expect and sources["model"] == model_source


def test_a_router_parents_endpoint_headers_and_routing_are_inherited() -> None:
    child, sources, notes = _provider(_d(model="google/gemini-2.5-pro"), **OPENROUTER)
    assert child.base_url == OPENROUTER["base_url"] and child.headers == OPENROUTER["headers"]
    assert child.routing == OPENROUTER["routing"] and child.thinking == "high"
    assert sources["base_url"] == sources["headers"] == sources["routing"] == "parent"
    assert sources["thinking"] == "parent" and notes == []


def test_switching_provider_drops_the_parents_endpoint() -> None:
    child, sources, notes = _provider(
        _d(model="openai/gpt-4o"),
        base_url="https://api.anthropic.com",
        headers={"X-Title": "t"},
        routing={"order": ["x"]},
    )
    assert (child.kind, child.base_url, child.headers, child.routing) == ("openai", None, {}, None)
    assert sources["provider"] == "frontmatter" and "not carried over" in notes[0]


def test_thinking_frontmatter_then_parent_then_default() -> None:
    assert _provider(_d(thinking="low"), thinking="high")[0].thinking == "low"
    assert _provider(_d(effort="max"), thinking="low")[0].thinking == "xhigh"
    assert _provider(_d(thinking="off", effort="high"))[0].thinking == "off"
    child, sources, _ = _provider(_d(), thinking="medium")
    assert child.thinking == "medium" and sources["thinking"] == "parent"
    child, sources, _ = _provider(_d())
    assert child.thinking is None and sources["thinking"] == "default"


def test_opusplan_follows_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _provider(_d(model="opusplan"), Mode.PLAN)[0].model == "claude-opus-4-1"
    assert _provider(_d(model="opusplan"))[0].model == "claude-sonnet-4-5"
    monkeypatch.setenv("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-9")
    assert _provider(_d(model="haiku"))[0].model == "claude-haiku-9"


@given(
    st.sampled_from([None, "inherit", "sonnet", "x/y", "openai/o3", "claude-x"]),
    st.sampled_from([None, *("off", "low", "xhigh")]),
    st.sampled_from([{}, OPENROUTER, {"base_url": "http://127.0.0.1:9/"}]),
)
def test_what_the_definition_does_not_set_is_the_parents(
    model: str | None, thinking: str | None, parent: dict[str, Any]
) -> None:
    child, sources, _ = _provider(_d(model=model, thinking=thinking), **parent)
    base = ProviderConfig.model_validate(
        {"kind": "anthropic", "model": "claude-sonnet-4-5", **parent}
    )
    for name in ("max_retries", "base_url", "headers", "routing"):
        if sources["provider"] == "parent":
            assert getattr(child, name) == getattr(base, name)
    if thinking is None:
        assert child.thinking == base.thinking
    if model in (None, "inherit"):
        assert child.model == base.model


# --- workspace ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "call", "expect"),
    [
        ({}, None, "inherit"),
        ({}, "temp", "temp"),
        ({"worktree": "temp"}, None, "temp"),
        ({"isolation": "worktree"}, None, "branch"),
        ({"worktree": "temp"}, "temp", "temp"),
        ({"worktree": "temp"}, "inherit", "WORKSPACE"),
        ({"isolation": "worktree"}, "temp", "WORKSPACE"),
        ({}, "sideways", "WORKSPACE"),
    ],
)
def test_the_workspaces_precedence(fields: dict[str, str], call: str | None, expect: str) -> None:
    got = _resolve(_d(**fields), call_worktree=call).workspace
    if expect == "WORKSPACE":
        assert isinstance(got, ResolveRefusal) and got.code == "WORKSPACE"
        assert "\n" not in got.message
    else:
        assert not isinstance(got, ResolveRefusal) and got.kind.value == expect


def test_max_turns_and_background() -> None:
    r = _resolve(_d(maxTurns=3, background=True))
    assert (r.max_turns, r.background, r.sources["max_turns"]) == (3, True, "frontmatter")
    assert _resolve(_d()).max_turns == 50
