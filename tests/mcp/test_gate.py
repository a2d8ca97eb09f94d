"""MCP calls through the same gate, preflight and scheduler as any call:
the rule forms `mcp__server`, `mcp__server__*`, `mcp__server__tool`, the
modes, protected-path / secret / scope checks on path arguments, batch
preflight, and the four-class dispatcher's overlap of Safe MCP calls; every
trace checked by the model (issue 16; anthropics/claude-code #28595 and
#80135 report MCP calls that bypassed permissions)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.mcp import McpHost
from metis_runtime.mcp import McpTool
from metis_runtime.mcp import header_meta
from metis_runtime.mcp import mcp_tools
from metis_runtime.mcp._setup import Started
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import builtin_tools
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectStart
from metis_trace import Mode
from metis_trace import Result
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind
from metis_trace import read_trace

from .conftest import base_env
from .conftest import stdio_server


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[McpHost, dict[str, McpTool]]]:
    ws = tmp_path_factory.mktemp("gate-ws")
    server = stdio_server()
    mcp = McpHost([server], workspace=ws, envs={"fixture": base_env()})
    listed = mcp.start()
    try:
        yield mcp, {t.name: t for t in mcp_tools(mcp, listed)}
    finally:
        mcp.close()


def gate(ws: Path, mode: Mode = Mode.DEFAULT, **rules: list[str]) -> Gate:
    policy = Policy()
    for behavior, patterns in rules.items():
        for p in patterns:
            policy.add(Source.PROJECT, RuleBehavior(behavior), p)
    return Gate(policy, mode, ws, Route.HEADLESS)


def decide(g: Gate, tool: McpTool, args: dict[str, object], ws: Path) -> Decision:
    c = tool.classify(args, ToolContext(ws, {}, JobManager()))
    assert c.kind is ToolKind.EXEC
    return g.decide(tool.name, args, c.kind, c.paths, c.command).decision


@pytest.mark.parametrize(
    ("rules", "tool", "want"),
    [
        ({"allow": ["mcp__fixture"]}, "lookup", Decision.ALLOW),
        ({"allow": ["mcp__fixture__*"]}, "append", Decision.ALLOW),
        ({"allow": ["mcp__fixture__lookup"]}, "lookup", Decision.ALLOW),
        ({"allow": ["mcp__fixture__lookup"]}, "append", Decision.ASK),
        ({"allow": ["mcp__other"]}, "lookup", Decision.ASK),
        ({"allow": ["mcp__fixture"], "deny": ["mcp__fixture__append"]}, "append", Decision.DENY),
        ({"allow": ["mcp__fixture"], "ask": ["mcp__fixture__purge"]}, "purge", Decision.ASK),
        ({"deny": ["mcp__*"]}, "lookup", Decision.DENY),
        ({}, "lookup", Decision.ASK),  # read-only hint or not: an MCP call asks by default
    ],
)
def test_rule_forms(
    served, tmp_path: Path, rules: dict[str, list[str]], tool: str, want: Decision
) -> None:  # type: ignore[no-untyped-def]
    _, tools = served
    args = {"key": "k"} if tool == "lookup" else {"path": "a.txt", "text": "t"}
    assert decide(gate(tmp_path, **rules), tools[f"mcp__fixture__{tool}"], args, tmp_path) is want


@pytest.mark.parametrize(
    ("mode", "want"),
    [
        (Mode.PLAN, Decision.DENY),
        (Mode.DONT_ASK, Decision.DENY),
        (Mode.ACCEPT_EDITS, Decision.ASK),  # an MCP call is exec, not an edit
        (Mode.BYPASS, Decision.ALLOW),
    ],
)
def test_modes_treat_annotated_read_only_as_exec(
    served, tmp_path: Path, mode: Mode, want: Decision
) -> None:  # type: ignore[no-untyped-def]
    _, tools = served
    assert (
        decide(gate(tmp_path, mode), tools["mcp__fixture__lookup"], {"key": "k"}, tmp_path) is want
    )


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("notes.txt", Decision.ALLOW),
        (".git/config", Decision.ASK),  # protected
        (".mcp.json", Decision.ASK),  # protected: it runs code
        (".env", Decision.ASK),  # secret-looking
        ("/etc/hosts", Decision.ALLOW),  # out of scope, but the allow rule comes first (stage 6)
    ],
)
def test_path_arguments_meet_the_path_checks(
    served, tmp_path: Path, path: str, want: Decision
) -> None:  # type: ignore[no-untyped-def]
    _, tools = served
    g = gate(tmp_path, allow=["mcp__fixture"])
    assert decide(g, tools["mcp__fixture__append"], {"path": path, "text": "x"}, tmp_path) is want


def test_out_of_scope_path_is_recorded(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, tools = served
    c = tools["mcp__fixture__append"].classify(
        {"path": "/etc/hosts", "text": "x"}, ToolContext(tmp_path, {}, JobManager())
    )
    facts = gate(tmp_path, Mode.DONT_ASK).decide("mcp__fixture__append", {}, c.kind, c.paths).facts
    assert not facts.in_scope


def test_a_deny_on_a_path_covers_mcp_arguments_in_bypass(served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, tools = served
    g = gate(tmp_path, Mode.BYPASS)
    c = tools["mcp__fixture__append"].classify(
        {"path": ".git/hooks/pre-commit", "text": "x"}, ToolContext(tmp_path, {}, JobManager())
    )
    assert g.decide("mcp__fixture__append", {}, c.kind, c.paths).facts.protected


def served_workspace(served) -> Path:  # type: ignore[no-untyped-def]
    """The server's working directory: where its relative paths land."""
    mcp, _ = served
    return Path(mcp._servers["fixture"].cwd)


def _run(served, ws: Path, batch: tuple[ToolUseBlock, ...], rules: dict[str, list[str]]) -> list:  # type: ignore[no-untyped-def,type-arg]
    mcp, tools = served
    registry = ToolRegistry([*builtin_tools(), *tools.values()])
    started = Started(mcp, tuple(tools.values()), ())
    header = make_header(
        mode=Mode.DEFAULT,
        tools=registry.names(),
        route=Route.HEADLESS,
        meta={"mcp": header_meta(started)},
    )
    trace_path = ws / "trace.jsonl"
    trace = TraceWriter(trace_path, header)
    loop = AgentLoop(
        ScriptedProvider([batch, (TextBlock("done"),)]),
        registry,
        gate(ws, **rules),
        ToolContext(ws, base_env(), JobManager()),
        trace,
        dispatcher=FourClassDispatcher(),
    )
    try:
        asyncio.run(loop.run("task"))
    finally:
        trace.close()
    with trace_path.open(encoding="utf-8") as fh:
        head, events = read_trace(fh)
    report = check_trace(events, head)
    assert report.ok, report.first.one_line() if report.first else ""
    assert head.meta["mcp"]["tools"]["mcp__fixture__lookup"]["class"] == "safe"
    return events


def test_preflight_and_four_classes(served) -> None:  # type: ignore[no-untyped-def]
    ws = served_workspace(served)
    batch = (
        ToolUseBlock("t1", "mcp__fixture__slow", {"seconds": 0.4}),
        ToolUseBlock("t2", "mcp__fixture__slow", {"seconds": 0.4}),
        ToolUseBlock("t3", "mcp__fixture__append", {"path": "out.txt", "text": "x"}),
        ToolUseBlock("t4", "mcp__fixture__purge", {"path": "out.txt"}),
        ToolUseBlock("t5", "mcp__fixture__lookup", {"nope": 1}),
    )
    events = _run(served, ws, batch, {"allow": ["mcp__fixture"], "deny": ["mcp__fixture__purge"]})
    decisions = {e.occ: e for e in events if isinstance(e, DecisionEvent)}
    results = {e.occ: e for e in events if isinstance(e, Result)}
    assert [decisions[f"1.{i}"].cls for i in range(4)] == [
        CallClass.SAFE,
        CallClass.SAFE,
        CallClass.EXCLUSIVE,
        CallClass.EXCLUSIVE,
    ]
    # every call is decided before any effect starts (batch preflight)
    first_effect = min(e.seq for e in events if isinstance(e, EffectStart))
    assert all(d.seq < first_effect for d in decisions.values())
    assert results["1.3"].status.value == "denied" and results["1.4"].status.value == "error"
    assert (
        "field" in results["1.4"].content
        or "unknown" in results["1.4"].content
        or "additional" in results["1.4"].content.lower()
        or "required" in results["1.4"].content
    )
    assert (ws / "out.txt").read_text() == "x\n"
    # the two Safe calls overlapped: each started before the other ended
    start = {e.occ: e.t for e in events if isinstance(e, EffectStart)}
    end = {e.occ: e.t for e in events if isinstance(e, EffectEnd)}
    assert start["1.1"] < end["1.0"] and start["1.0"] < end["1.1"]
    calls = [c.tool for e in events if isinstance(e, Assistant) for c in e.calls]
    assert calls[0] == "mcp__fixture__slow"
