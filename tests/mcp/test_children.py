"""A child agent sees an MCP tool only when its surface admits it: it gets
its own session with the servers its surface has tools of, and its registry
is narrowed to the surface like every other tool (specs/children.md)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from metis_check import check_trace
from metis_runtime.agents import AgentSupervisor
from metis_runtime.agents import ProviderConfig
from metis_runtime.agents import load_agents
from metis_runtime.agents import new_tree
from metis_runtime.agents import run_child
from metis_runtime.mcp import servers_for_surface
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_trace import Mode
from metis_trace import Result
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import read_trace

from .conftest import stdio_entry


def test_servers_for_surface() -> None:
    servers = {"fixture": {"command": "a"}, "other.srv": {"command": "b"}}
    assert servers_for_surface(servers, ["read", "mcp__fixture__lookup"]) == {
        "fixture": {"command": "a"}
    }
    assert servers_for_surface(servers, ["mcp__other_srv__x"]) == {"other.srv": {"command": "b"}}
    assert servers_for_surface(servers, ["read", "mcp__fixturex__y"]) == {}


def test_child_gets_only_the_admitted_mcp_tool(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path / "ws"))
    (ws / ".metis" / "agents").mkdir(parents=True)
    # No `tools:` line: the definition narrows nothing (as Claude Code's subagents).
    (ws / ".metis" / "agents" / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps.\n---\nHelp.\n", encoding="utf-8"
    )
    policy = Policy()
    policy.add(Source.PROJECT, RuleBehavior.ALLOW, "mcp__fixture")
    gate = Gate(policy, Mode.DEFAULT, ws, Route.HEADLESS)
    identity, ledger = new_tree(tmp_path / "run")
    parent_tools = ["read", "mcp__fixture__lookup", "mcp__fixture__append"]
    supervisor = AgentSupervisor(
        identity,
        workspace=ws,
        gate=gate,
        visible_tools=parent_tools,
        catalog=load_agents(ws),
        provider=ProviderConfig(kind="factory", factory="tests.mcp.child_provider:provider"),
        ledger=ledger,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        inline=run_child,
        mcp_servers={"fixture": stdio_entry()},
    )

    async def main() -> None:
        try:
            record = await supervisor.spawn(
                "helper", "look it up", tools=["read", "mcp__fixture__lookup"]
            )
            assert not hasattr(record, "code"), record
            await supervisor.wait()
        finally:
            await supervisor.close()  # the child's MCP sessions end with it

    asyncio.run(main())
    (child_dir,) = (tmp_path / "run" / "agents").iterdir()
    config = json.loads((child_dir / "config.json").read_text())
    assert set(config["mcp_servers"]) == {"fixture"}
    with (child_dir / "trace.jsonl").open(encoding="utf-8") as fh:
        header, events = read_trace(fh)
    assert "mcp__fixture__lookup" in header.tools and "mcp__fixture__append" not in header.tools
    results = {e.occ: e for e in events if isinstance(e, Result)}
    assert results["1.0"].status.value == "ok" and results["1.0"].content == "value of child"
    assert (
        results["1.1"].status.value == "error"
        and "unknown tool 'mcp__fixture__append'" in results["1.1"].content
    )
    assert check_trace(events, header).ok
