"""Building and running one child agent from its `ChildConfig`.

`run_child(config)` is what `python -m metis_runtime.agents._child` runs (and
what the child-boundary ablation runs in process): the provider, the gate
(cloned by the parent, plus the inherited hooks), the registry narrowed to
the child's surface, its own supervisor (so it may spawn in turn, within the
same tree-wide guard), context control, and the agent loop writing to the
trace whose header the parent wrote. The outcome goes to `result.json`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from metis_trace import CallClass
from metis_trace import InputError
from metis_trace import decode_json

from .._input import open_regular
from .._input import read_fd_bounded
from .._journal import Journal
from .._loop import AgentLoop
from .._loop import LoopConfig
from .._loop import RunResult
from .._private import write_private_json
from .._session import Session
from .._trace import TraceWriter
from ..context import ContextBudget
from ..context import ContextController
from ..context import provider_summarizer
from ..mcp import Declared
from ..mcp import Started
from ..mcp import parse_server
from ..mcp import start_mcp
from ..providers import Message
from ..providers import Provider
from ..providers import TextBlock
from ..tools import JobManager
from ..tools import ToolContext
from ..tools import ToolRegistry
from ._config import ChildConfig
from ._config import build_gate
from ._config import build_provider
from ._definitions import load_agents
from ._guard import SpawnLedger
from ._hooks import HookedGate
from ._hooks import load_hooks
from ._process import tool_env
from ._records import AgentIdentity
from ._supervisor import AgentSupervisor
from ._tools import agent_tools

_LIVE = ("anthropic", "openai", "openai-responses")


@attrs.define
class ChildRuntime:
    """Everything one child runs with (kept for tests and the ablation)."""

    config: ChildConfig
    loop: AgentLoop
    supervisor: AgentSupervisor
    registry: ToolRegistry
    provider: Provider
    trace: TraceWriter
    journal: Journal | None
    mcp: Started | None = None


def task_text(config: ChildConfig) -> str:
    if not config.context.strip():
        return config.task
    return f"{config.task}\n\nContext from the agent that started you:\n{config.context}"


class Inbox:
    """Messages a parent queued with message_agent, read before each request."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def drain(self) -> list[str]:
        if not self.path.exists():
            return []
        fd = open_regular(self.path)  # never a FIFO or a device
        try:
            data = read_fd_bounded(fd, str(self.path))[self._offset :]
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next turn
        self._offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                obj = decode_json(line.decode("utf-8", "replace"))
            except InputError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("text"), str):
                out.append(f"[message from {obj.get('from', 'your parent')}] {obj['text']}")
        return out

    async def follow_up(self) -> str | None:
        """After the child answered: messages its parent queued meanwhile start
        another turn instead of being lost when it ends."""
        notes = self.drain()
        return "\n\n".join(notes) if notes else None


def context_hook(
    controller: ContextController, trace: TraceWriter, inbox: Inbox | None
) -> Callable[[Session, int], Awaitable[None]]:
    """Deliver queued messages (joined to the last user message, after its
    results), then run the context ladder."""
    ladder = controller.hook(trace)

    async def hook(session: Session, turn: int) -> None:
        notes = inbox.drain() if inbox is not None else []
        if notes and session.messages and session.messages[-1].role == "user":
            last = session.messages[-1]
            session.messages[-1] = Message("user", (*last.content, *(TextBlock(n) for n in notes)))
        await ladder(session, turn)

    return hook


def build_child(config: ChildConfig, *, env: dict[str, str] | None = None) -> ChildRuntime:
    workspace = Path(config.workspace)
    agent_dir = Path(config.agent_dir)
    info: dict[str, Any] = {
        "agent": config.agent.name,
        "agent_id": config.agent_id,
        "depth": config.depth,
        "task": config.task,
        "workspace": str(workspace),
        "agent_dir": str(agent_dir),
    }
    provider = build_provider(config.provider, info)
    gate: Any = build_gate(config.gate, workspace)
    hooks = load_hooks(config.hooks, cwd=workspace)
    if hooks:
        about = {"agent_id": config.agent_id, "depth": config.depth}
        gate = HookedGate(gate, hooks, about=about)
    trace = TraceWriter(config.trace_path)  # the parent wrote the header
    identity = AgentIdentity(
        config.root_run_id, config.agent_id, config.depth, Path(config.run_dir)
    )
    project = config.project_dir or config.workspace
    names: list[str] = []
    supervisor = AgentSupervisor(
        identity,
        workspace=workspace,
        gate=gate,
        visible_tools=lambda: names,
        catalog=load_agents(project).restricted(config.spawnable),
        provider=config.provider,
        ledger=SpawnLedger(config.ledger_path),
        hooks=config.hooks,
        child_deny=config.child_deny,
        headless_default=config.gate.headless_default,
        context_budget=config.context_budget,
        max_turns=config.max_turns,
        trace=trace,
        project_dir=project,
        mcp_servers=config.mcp_servers,
        mcp_classes=config.mcp_classes,
    )
    mcp = _start_mcp(config, workspace, env)
    everything = ToolRegistry(
        [*ToolRegistry.load(), *(mcp.tools if mcp is not None else ()), *agent_tools(supervisor)]
    )
    if config.filter_registry:
        registry = everything.subset(n for n in config.tools if n in everything)
    else:
        registry = everything  # the ablation's unprotected child sees every tool
    names.extend(registry.names())
    budget = ContextBudget(**config.context_budget) if config.context_budget else ContextBudget()
    summarizer = provider_summarizer(provider) if config.provider.kind in _LIVE else None
    controller = ContextController(budget, summarizer=summarizer, offload_dir=agent_dir / "offload")
    inbox = Inbox(config.inbox_path)
    journal = Journal.create(
        agent_dir / "trace.jsonl.journal", trace.header.run_id, {"agent_id": config.agent_id}
    )
    # Tools never see credentials: the provider got them from the environment above.
    tools_env = tool_env(env, config.agent.env)
    loop = AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(workspace, tools_env, JobManager()),
        trace,
        journal=journal,
        config=LoopConfig(
            system=config.agent.system_prompt or "You are a sub-agent. Do the task.",
            max_turns=config.max_turns,
        ),
        context_hook=context_hook(controller, trace, inbox),
        follow_up=inbox.follow_up,
    )
    return ChildRuntime(config, loop, supervisor, registry, provider, trace, journal, mcp)


def _start_mcp(config: ChildConfig, workspace: Path, env: dict[str, str] | None) -> Started | None:
    """The child's own sessions with its parent's MCP servers (those with a
    tool in its surface), expanded in the child's environment; the tools are
    then narrowed to the surface with the rest of the registry."""
    if not config.mcp_servers:
        return None
    servers = [
        parse_server(name, entry, f"agent {config.agent_id}")
        for name, entry in config.mcp_servers.items()
    ]
    declared = tuple(Declared(p, CallClass(c), k) for p, c, k in config.mcp_classes)
    return start_mcp(servers, workspace, declared, base_env=env)


def write_result(path: Path, result: RunResult) -> None:
    data = {
        "status": result.status.value,
        "text": result.text,
        "error": result.error,
        "turns": result.turns,
    }
    write_private_json(path, data)


async def run_child(config: ChildConfig, *, env: dict[str, str] | None = None) -> RunResult:
    """Run the child to its end; its children are killed and its retained
    workspaces removed when it ends (its parent integrates only its own)."""
    return await drive_child(build_child(config, env=env), config)


async def drive_child(runtime: ChildRuntime, config: ChildConfig) -> RunResult:
    """Run a built child to its end, close what it holds, write its result."""
    try:
        result = await runtime.loop.run(task_text(config))
    finally:
        try:
            await runtime.supervisor.close()
            if runtime.mcp is not None:
                runtime.mcp.host.close()
        finally:
            runtime.trace.close()
            if runtime.journal is not None:
                runtime.journal.close()
    write_result(config.result_path, result)
    return result


def run_child_sync(config: ChildConfig) -> RunResult:
    return asyncio.run(run_child(config))
