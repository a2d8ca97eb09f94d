"""One workload through the real runtime in this process, as `metis run` wires it.

The pieces are the production ones: the scenario's cassette replayed through
the Anthropic adapter, the built-in and agent tools, the permission `Gate`
with the workload's settings file, hooks (`HookedGate` for the root; the
supervisor passes them to every child), the four-class dispatcher, context
control with the offload folder, a trace and an fsynced journal. Children
are real processes (`python -m metis_runtime.agents._child`) replaying their
own cassettes. Asks are answered by a scripted asker on the workload's route:
a `TerminalAsker` reading the scripted `y`/`n` lines (interactive), a
`CallbackAsker` (protocol), or the headless default.

Layout under `root`: `scenario.yaml` (+ child cassettes and the settings
file), `ws/` (the workspace), `run/` (trace, journal, the agent tree, offloads).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import JournalState
from metis_runtime import LoopConfig
from metis_runtime import LoopObserver
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime import scan_trace
from metis_runtime.agents import CLAUDE_CONFIG_ENV
from metis_runtime.agents import USER_AGENTS_ENV
from metis_runtime.agents import AgentSupervisor
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import HookedGate
from metis_runtime.agents import HookSpec
from metis_runtime.agents import ProviderConfig
from metis_runtime.agents import agent_tools
from metis_runtime.agents import load_agents
from metis_runtime.agents import load_hooks
from metis_runtime.agents import new_tree
from metis_runtime.agents import sanitized_env
from metis_runtime.context import ContextBudget
from metis_runtime.context import ContextController
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.permissions import Asker
from metis_runtime.permissions import CallbackAsker
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import TerminalAsker
from metis_runtime.providers import Cassette
from metis_runtime.providers import load_scenario
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_trace import Decision
from metis_trace import Route
from metis_trace import Source

from ._child_ids import ChildIdReplay
from ._child_ids import names_children
from ._mech_run import MANAGED_ENV
from ._mech_run import with_mechanisms
from ._scenario import GUARD_FLAGS
from ._scenario import definitions_dir
from ._scenario import settings_of
from ._scenario import turn_starts
from ._scenario import write_scenario
from ._wire import write_sent
from ._workload import Hook
from ._workload import Workload

AGENT_EXEC_TOOLS = ("spawn_agent", "kill_agent", "message_agent")

JOB_WAIT = 20.0
VETO = "echo 'vetoed by explore hook {id}' >&2; exit 2"
PASS = "cat > /dev/null; exit 0"
FAIL = "echo 'explore hook {id} failed' >&2; exit 1"


@attrs.frozen
class RunPaths:
    root: Path

    @property
    def scenario(self) -> Path:
        return self.root / "scenario.yaml"

    @property
    def settings(self) -> Path:
        return self.root / "scenario.settings.json"

    @property
    def definitions(self) -> Path:
        return definitions_dir(self.scenario)

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def trace(self) -> Path:
        return self.run_dir / "trace.jsonl"

    @property
    def journal(self) -> Path:
        return self.run_dir / "trace.jsonl.journal"

    @property
    def witness(self) -> Path:
        return self.run_dir / "trace.jsonl.witness"


def turn_limit(workload: Workload) -> int:
    return workload.max_turns or len(workload.turns) + 2


def _hook_command(hook: Hook) -> str:
    return {0: PASS, 1: FAIL, 2: VETO}[hook.exit_status].format(id=hook.id)


def hook_specs(workload: Workload) -> tuple[HookSpec, ...]:
    return tuple(
        HookSpec(id=h.id, matcher=h.matcher, command=_hook_command(h)) for h in workload.hooks
    )


def prepare(workload: Workload, paths: RunPaths) -> None:
    """Write the scenario (and settings) and seed the workspace."""
    write_scenario(workload, paths.scenario)
    for name, content in workload.files.items():
        target = paths.workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    for name, content in workload.placed.items():  # a mechanism's files beside the scenario
        target = paths.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    paths.workspace.mkdir(parents=True, exist_ok=True)
    paths.run_dir.mkdir(parents=True, exist_ok=True)


def answered_asks(events: Any) -> int:
    """How many asks a scripted asker already answered (resolver user/protocol)."""
    return sum(1 for e in events if e.kind == "ask_resolved" and e.resolver in ("user", "protocol"))


class _Answers:
    """The scripted replies, consumed in order; past the end, deny."""

    def __init__(self, answers: tuple[bool, ...]) -> None:
        self._it: Iterator[bool] = iter(answers)

    def __call__(self, request: object) -> bool:
        return next(self._it, False)


def _asker(workload: Workload, skip: int) -> Asker | None:
    answers = workload.answers[skip:]
    if workload.route is Route.INTERACTIVE:
        lines = "".join("y\n" if a else "n\n" for a in answers)
        return TerminalAsker(input=io.StringIO(lines), output=io.StringIO())
    if workload.route is Route.PROTOCOL:
        return CallbackAsker(_Answers(answers))
    return None


def build_gate(workload: Workload, paths: RunPaths, skip_answers: int = 0) -> Gate:
    policy = Policy()
    if settings_of(workload) is not None:
        paths.settings.exists() or paths.settings.write_text(json.dumps(settings_of(workload)))
        policy.load(paths.settings, Source.CLI)
    for name in AGENT_EXEC_TOOLS:
        policy.add(Source.CLI, "allow", name, origin="explore: agent tools")  # type: ignore[arg-type]
    return Gate(
        policy,
        workload.mode,
        paths.workspace,
        workload.route,
        _asker(workload, skip_answers),
        headless_default=workload.headless_default,
    )


def _dispatcher(workload: Workload) -> Dispatcher:
    return SerialDispatcher() if workload.dispatcher == "serial" else FourClassDispatcher()


def _budget(workload: Workload) -> ContextBudget:
    if workload.context_window is None:
        return ContextBudget()
    return ContextBudget.for_window(workload.context_window, recent=workload.context_recent)


def child_env(paths: RunPaths) -> dict[str, str]:
    """What the children and the tools get: this process's environment, with
    credentials dropped, this copy of the code importable first, and the
    workload's child definitions as the user's agents."""
    env = sanitized_env()
    env[USER_AGENTS_ENV] = str(paths.definitions)
    # Claude Code's user agents and managed settings: the run's own, never the machine's.
    env[CLAUDE_CONFIG_ENV] = str(paths.root / "home" / ".claude")
    env[MANAGED_ENV] = str(paths.root / "managed")
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


@attrs.define
class Run:
    """A loop ready to run (or resume), with what must be closed after it."""

    loop: AgentLoop
    supervisor: AgentSupervisor
    state: JournalState | None
    # Where the requests as posted are kept (`_wire.py`): beside the run's
    # folder, not in it, since they hold what the model was shown, credentials
    # included, and TRACE-2 scans the run's own files.
    sent_dir: Path | None = None

    async def go(self, task: str) -> RunResult:
        try:
            if self.state is None:
                return await self.loop.run(task)
            return await self.loop.resume(self.state, scan_trace(self.loop.trace.events))
        finally:
            await self.supervisor.close()

    def close(self) -> None:
        sent = getattr(self.loop.provider, "sent", None)
        if isinstance(sent, list) and self.sent_dir is not None:
            write_sent(self.sent_dir, sent)
        self.loop.trace.close()
        if self.loop.journal is not None:
            self.loop.journal.close()


def build(
    workload: Workload,
    paths: RunPaths,
    *,
    resume: bool = False,
    observer: LoopObserver | None = None,
) -> Run:
    """The root agent's loop on a new trace, or (`resume`) on the one left."""
    scenario = load_scenario(paths.scenario)
    state: JournalState | None = None
    skip_answers = 0
    interactions = scenario.cassette.interactions
    if resume:
        journal, state = Journal.open(paths.journal)
        trace = TraceWriter(paths.trace)
        scan = scan_trace(trace.events)
        skip_answers = answered_asks(trace.events)
        # A resumed run asks for the turn after the last answer it has.
        interactions = interactions[turn_starts(workload.turns)[len(scan.assistant_turns) + 1] :]
    gate = build_gate(workload, paths, skip_answers)
    hooks = hook_specs(workload)
    identity, ledger = new_tree(
        paths.run_dir, GuardLimits(**workload.guard), root_run_id=state.run_id if state else None
    )
    cassettes = {
        c.name: str(paths.scenario.parent / f"{paths.scenario.stem}.agents" / f"{c.name}.yaml")
        for c in workload.agents
    }
    supervisor = AgentSupervisor(
        identity,
        workspace=paths.workspace,
        gate=gate,
        visible_tools=(),
        catalog=load_agents(
            paths.workspace,
            user_dir=paths.definitions,
            claude_user_dir=paths.root / "home" / ".claude" / "agents",
        ),
        provider=ProviderConfig(kind="replay", scenarios=cassettes),
        ledger=ledger,
        hooks=hooks,
        headless_default=Decision.DENY,
        context_budget=attrs.asdict(_budget(workload)),
        env=child_env(paths),
    )
    registry = ToolRegistry([*ToolRegistry.builtin(), *agent_tools(supervisor)])
    decider: Any = gate
    if hooks:
        about = {"agent_id": identity.agent_id, "depth": 0}
        decider = HookedGate(gate, load_hooks(hooks, cwd=paths.workspace), about=about)
    if not resume:
        header = make_header(
            mode=workload.mode,
            tools=registry.names(),
            route=gate.route,
            headless_default=workload.headless_default,
            run_id=identity.root_run_id,
            meta={"task": workload.prompt, "workload": workload.name, **supervisor.header_meta()},
            hooks=supervisor.header_hooks(),
        )
        trace = TraceWriter(paths.trace, header)
        journal = Journal.create(paths.journal, header.run_id, {"workload": workload.name})
    supervisor.bind(registry.names, trace)
    controller = ContextController(_budget(workload), offload_dir=paths.run_dir / "offload")
    loop = AgentLoop(
        ChildIdReplay(Cassette(scenario.cassette.path, interactions), lambda: supervisor.children),
        registry,
        decider,
        ToolContext(paths.workspace, child_env(paths), JobManager()),
        trace,
        journal=journal,
        dispatcher=_dispatcher(workload),
        observer=observer,
        config=LoopConfig(max_turns=turn_limit(workload), job_wait=JOB_WAIT),
        context_hook=controller.hook(trace),
        overflow_hook=controller.retry_hook(trace),
    )
    return Run(loop, supervisor, state, paths.root)


def metis_run_argv(workload: Workload, paths: RunPaths, python: str) -> list[str]:
    """`metis run` for this workload (what it can express; see `runs_as_metis_run`)."""
    argv = [
        python,
        "-m",
        "metis_cli",
        "run",
        "--scenario",
        str(paths.scenario),
        "--workspace",
        str(paths.workspace),
        "--trace",
        str(paths.trace),
        "--mode",
        workload.mode.value,
        "--max-turns",
        str(turn_limit(workload)),
        "--quiet",
    ]
    if workload.route is Route.HEADLESS:
        argv.append("--headless")
    if workload.rules:
        argv += ["--settings", str(paths.settings)]
    if workload.context_window is not None:
        argv += [
            "--context-window",
            str(workload.context_window),
            "--context-recent",
            str(workload.context_recent),
        ]
    if workload.dispatcher == "serial":
        argv.append("--serial")
    for name, value in sorted(workload.guard.items()):
        argv += [GUARD_FLAGS[name], str(value)]
    return with_mechanisms(workload, paths, argv)


def runs_as_metis_run(workload: Workload) -> bool:
    """Whether `metis run` can express the workload: no hooks, no protocol
    route, the headless default deny (as `metis run --headless` has it), no
    child named by its definition (`_child_ids.py`)."""
    return (
        not workload.hooks
        and not names_children(workload)
        and workload.probe is None
        and workload.route in (Route.HEADLESS, Route.INTERACTIVE)
        and workload.headless_default is Decision.DENY
    )


def describe(argv: list[str], env: Mapping[str, str] | None = None) -> str:
    shown = " ".join(shlex.quote(a) for a in argv)
    return f"{' '.join(f'{k}={v}' for k, v in (env or {}).items())} {shown}".strip()


async def run_in_process(
    workload: Workload, paths: RunPaths, observer: LoopObserver | None = None
) -> RunResult:
    run = build(workload, paths, observer=observer)
    try:
        return await run.go(workload.prompt)
    finally:
        run.close()


async def resume_in_process(workload: Workload, paths: RunPaths) -> RunResult:
    run = build(workload, paths, resume=True)
    try:
        return await run.go(workload.prompt)
    finally:
        run.close()


def run_sync(coro: Any) -> Any:
    return asyncio.run(coro)
