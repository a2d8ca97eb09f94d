"""Shared helpers of the agent tests: git workspaces, a root agent, trace trees."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_check._report import Report
from metis_check._tree import check_trace_tree
from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import LoopConfig
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import AgentSupervisor
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import HookedGate
from metis_runtime.agents import HookSpec
from metis_runtime.agents import ProviderConfig
from metis_runtime.agents import agent_tools
from metis_runtime.agents import catalog_of
from metis_runtime.agents import load_agents
from metis_runtime.agents import load_hooks
from metis_runtime.agents import new_tree
from metis_runtime.context import ContextBudget
from metis_runtime.context import ContextController
from metis_runtime.dispatch import GateLike
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import ScriptFunction
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import Source
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import read_trace

REPO = Path(__file__).resolve().parents[2]
FACTORY = ProviderConfig(kind="factory", factory="tests.agents._scripts:child_provider")


def spawn(cid: str, agent: str, task: str, **more: Any) -> ToolUseBlock:
    """A `spawn_agent` call of `agent` with `task` (and the rest of its input)."""
    return ToolUseBlock(cid, "spawn_agent", {"agent": agent, "task": task, **more})


def child_env() -> dict[str, str]:
    """The environment children get: ours, with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def git(args: Sequence[str], cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    ).stdout


def git_workspace(path: Path) -> Path:
    """A repository with a commit, an uncommitted change, an untracked and an ignored file."""
    path.mkdir(parents=True, exist_ok=True)
    git(["init", "-q", "-b", "main"], path)
    (path / "tracked.txt").write_text("committed\n")
    (path / ".gitignore").write_text("ignored.txt\n")
    git(["add", "."], path)
    git(["commit", "-q", "-m", "init"], path)
    (path / "tracked.txt").write_text("committed\nchanged but not committed\n")
    (path / "untracked.txt").write_text("new and untracked\n")
    (path / "ignored.txt").write_text("ignored\n")
    return path


def sleeper_definition() -> AgentDefinition:
    return AgentDefinition(
        name="sleeper",
        description="sleeps and spawns sleepers",
        tools=("bash", "spawn_agent"),
        system_prompt="sleep",
    )


@attrs.define
class Root:
    loop: AgentLoop
    supervisor: AgentSupervisor
    trace: TraceWriter
    run_dir: Path
    workspace: Path
    provider: ScriptedProvider

    def run(self, task: str) -> RunResult:
        async def main() -> RunResult:
            try:
                return await self.loop.run(task)
            finally:
                await self.supervisor.close()

        try:
            return asyncio.run(main())
        finally:
            self.trace.close()


def make_root(
    tmp: Path,
    script: ScriptFunction | Sequence[Any],
    *,
    workspace: Path | None = None,
    limits: GuardLimits | None = None,
    mode: Mode = Mode.DEFAULT,
    allow: Sequence[str] = ("spawn_agent", "wait_agent", "kill_agent", "message_agent"),
    deny: Sequence[str] = (),
    hooks: Sequence[HookSpec] = (),
    extra_definitions: Sequence[AgentDefinition] = (),
    budget: ContextBudget | None = None,
    gate: GateLike[Any] | None = None,
    run_id: str | None = None,
    journal: Journal | None = None,
    trace: TraceWriter | None = None,
    writer: type[TraceWriter] = TraceWriter,
) -> Root:
    """A root agent run in process: production gate (headless, with allow
    rules for the agent tools), agent tools in its registry, context control.
    Its trace is `trace` (one to resume), else a new `writer` in `tmp/run`."""
    ws = workspace if workspace is not None else git_workspace(tmp / "ws")
    run_dir = tmp / "run"
    identity, ledger = new_tree(run_dir, limits or GuardLimits(), root_run_id=run_id)
    if gate is None:
        policy = Policy()
        for pattern in allow:
            policy.add(Source.CLI, "allow", pattern)  # type: ignore[arg-type]
        for pattern in deny:
            policy.add(Source.CLI, "deny", pattern)  # type: ignore[arg-type]
        gate = Gate(policy, mode, ws, Route.HEADLESS, headless_default=Decision.DENY)
    if hooks:
        gate = HookedGate(gate, load_hooks(hooks, cwd=ws))
    catalog = load_agents(ws)
    if extra_definitions:
        catalog = catalog_of([*extra_definitions, *catalog.agents.values()])
    names: list[str] = []
    supervisor = AgentSupervisor(
        identity,
        workspace=ws,
        gate=gate,
        visible_tools=lambda: names,
        catalog=catalog,
        provider=FACTORY,
        ledger=ledger,
        hooks=hooks,
        env=child_env(),
    )
    registry = ToolRegistry([*ToolRegistry.builtin(), *agent_tools(supervisor)])
    names.extend(registry.names())
    if trace is None:
        header = make_header(
            mode=mode,
            tools=registry.names(),
            route=Route.HEADLESS,
            run_id=identity.root_run_id,
            meta=supervisor.header_meta(),
            hooks=supervisor.header_hooks(),
        )
        trace = writer(run_dir / "trace.jsonl", header)
    supervisor.trace = trace
    provider = ScriptedProvider(script)
    controller = ContextController(budget) if budget is not None else None
    loop = AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(ws, child_env(), JobManager()),
        trace,
        journal=journal,
        config=LoopConfig(max_turns=10),
        context_hook=controller.hook(trace) if controller is not None else None,
    )
    return Root(loop, supervisor, trace, run_dir, ws, provider)


def read_tree(run_dir: Path) -> dict[str, tuple[TraceHeader, list[TraceEvent]]]:
    out = {}
    for path in sorted(run_dir.rglob("trace.jsonl")):
        with path.open(encoding="utf-8") as fh:
            out[str(path.relative_to(run_dir))] = read_trace(fh)
    return out


def tree_report(run_dir: Path) -> Report:
    return check_trace_tree(read_tree(run_dir), source=str(run_dir))


def events_of(run_dir: Path, agent: str) -> tuple[TraceHeader, list[TraceEvent]]:
    """The trace of the (only) child of that agent name."""
    found = [v for v in read_tree(run_dir).values() if v[0].meta.get("agent") == agent]
    assert len(found) == 1, [h.agent_id for h, _ in found]
    return found[0]


def results(events: Sequence[TraceEvent]) -> dict[str, tuple[str, str]]:
    return {e.occ: (e.status.value, e.content) for e in events if e.kind == "result"}  # type: ignore[union-attr]
