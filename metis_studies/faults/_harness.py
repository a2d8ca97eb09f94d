"""The fault matrix's pieces: fault-injecting tools, one run of the real loop
(`Harness`: a workspace, a trace, a journal), and what a row observed.

A row holds when the observed closure and effects equal the expected ones,
closure is one-to-one and the trace conforms (`metis_model.check_trace`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

import metis_studies
from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import JournalState
from metis_runtime import LoopConfig
from metis_runtime import LoopObserver
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime import scan_trace
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import Provider
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import Classification
from metis_runtime.tools import JobManager
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import ToolSpec
from metis_runtime.tools import atomic_write
from metis_runtime.tools import builtin_tools
from metis_runtime.tools import resolve_path
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import JobDone
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import Result
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RunEnd
from metis_trace import Source
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import read_trace_numbered

ROOT = Path(metis_studies.__file__).resolve().parent.parent
RECORDED_STREAM = (
    ROOT / "tests/data/streams/anthropic/test_anthropic_local_shell_toolset_stream.yaml"
)
WAIT = 20.0  # seconds any single wait in a row may take before the row fails
DISPATCHERS: dict[str, Callable[[], Dispatcher]] = {
    "serial": SerialDispatcher,
    "four-class": FourClassDispatcher,
}


@attrs.frozen
class FaultRow:
    """One row of the matrix: what must happen, what did, and whether it holds."""

    case: str
    expected_closure: str
    expected_effects: str
    observed_closure: str
    observed_effects: str
    trace_conforms: bool
    one_to_one: bool
    note: str = ""

    @property
    def holds(self) -> bool:
        return (
            self.trace_conforms
            and self.one_to_one
            and self.observed_closure == self.expected_closure
            and self.observed_effects == self.expected_effects
        )

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "holds": self.holds}


# --- fault-injecting tools --------------------------------------------------------------


def _schema(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


class ExplodeTool(Tool):
    """A buggy plugin: raises a plain exception (not a ToolError) when run."""

    spec = ToolSpec("explode", "Crashes.", _schema({}, ()))

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EXEC

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return Classification(CallClass.EXCLUSIVE, None, ToolKind.EXEC)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        raise RuntimeError("injected fault: the tool crashed")


class MultiWriteTool(Tool):
    """Writes several files in order and fails before the `fail_after`-th:
    a partial mutation, snapshotted through the call's FileTransaction."""

    spec = ToolSpec(
        "multi_write",
        "Writes `files` (name -> content) in order; fails before file `fail_after`.",
        _schema(
            {"files": {"type": "object"}, "fail_after": {"type": "integer", "minimum": 0}},
            ("files",),
        ),
    )

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EDIT

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.spec.validate(input)
        paths = tuple(resolve_path(ctx.workspace, n, tool="multi_write") for n in input["files"])
        return Classification(CallClass.EXCLUSIVE, None, ToolKind.EDIT, paths)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.spec.validate(input)
        fail_after = input.get("fail_after")
        for i, (name, content) in enumerate(input["files"].items()):
            if i == fail_after:
                raise RuntimeError(f"injected fault: failed after writing {i} file(s)")
            path = resolve_path(ctx.workspace, name, tool="multi_write")
            if ctx.transaction is not None:
                ctx.transaction.snapshot(path)  # before mkdir, so new dirs are undone too
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, str(content).encode())
        return ToolOutput(f"wrote {len(input['files'])} file(s)")


# --- one run of the real loop --------------------------------------------------------------

Turn = Sequence[TextBlock | ToolUseBlock]
DONE: Turn = (TextBlock("done"),)


def bash(call_id: str, command: str, **extra: Any) -> ToolUseBlock:
    return ToolUseBlock(call_id, "bash", {"command": command, **extra})


def log_line(letter: str) -> str:
    return f"echo {letter} >> log.txt"


class Harness:
    """A workspace, a trace, a journal and the loop that writes them."""

    def __init__(
        self, workdir: Path, name: str, *, fsync: bool = False, dispatcher: str = "serial"
    ) -> None:
        self.dir = workdir.absolute() / name  # its servers and children run in other folders
        self.dispatcher = dispatcher
        self.ws = self.dir / "ws"
        self.ws.mkdir(parents=True, exist_ok=True)
        self.trace_path = self.dir / "trace.jsonl"
        self.journal_path = self.dir / "trace.jsonl.journal"
        self.fsync = fsync
        self.extra: list[Tool] = []  # more tools (the MCP rows' server tools)

    def gate(self) -> Gate:
        policy = Policy()
        for pattern in ("Bash", "Write", "Edit", "explode", "multi_write", "mcp__faults"):
            policy.add(Source.PROJECT, RuleBehavior.ALLOW, pattern)
        policy.add(Source.PROJECT, RuleBehavior.DENY, "Bash(rm:*)")
        return Gate(policy, Mode.DEFAULT, self.ws, Route.HEADLESS)

    def loop(
        self, provider: Provider, observer: LoopObserver | None = None, *, resume: bool = False
    ) -> tuple[AgentLoop, JournalState | None]:
        """A loop on a new trace, or (`resume`) on the existing one; with the
        journal state when resuming."""
        registry = ToolRegistry([*builtin_tools(), ExplodeTool(), MultiWriteTool(), *self.extra])
        state: JournalState | None = None
        if resume:
            trace = TraceWriter(self.trace_path)
            journal, state = Journal.open(self.journal_path, fsync=self.fsync)
        else:
            header = make_header(mode=Mode.DEFAULT, tools=registry.names(), route=Route.HEADLESS)
            trace = TraceWriter(self.trace_path, header)
            journal = Journal.create(self.journal_path, header.run_id, {}, fsync=self.fsync)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.ws)}
        loop = AgentLoop(
            provider,
            registry,
            self.gate(),
            ToolContext(self.ws, env, JobManager()),
            trace,
            journal=journal,
            dispatcher=DISPATCHERS[self.dispatcher](),
            observer=observer,
            config=LoopConfig(job_wait=WAIT),
        )
        return loop, state

    async def run(self, provider: Provider, observer: LoopObserver | None = None) -> None:
        loop, _ = self.loop(provider, observer)
        try:
            await loop.run("the task")
        finally:
            close_loop(loop)

    async def resume(self, provider: Provider) -> None:
        loop, state = self.loop(provider, resume=True)
        assert state is not None
        try:
            await loop.resume(state, scan_trace(loop.trace.events))
        finally:
            close_loop(loop)

    # --- what happened ---------------------------------------------------------------

    def events(self) -> tuple[list[TraceEvent], bool, str]:
        with self.trace_path.open(encoding="utf-8") as fh:
            header, events, line_of = read_trace_numbered(fh)
        report = check_trace(events, header, source=str(self.trace_path), line_of=line_of)
        return events, report.ok, report.first.one_line() if report.first is not None else ""

    def log(self) -> Counter[str]:
        path = self.ws / "log.txt"
        return Counter(path.read_text().split()) if path.exists() else Counter()

    def counts(self, *letters: str) -> dict[str, object]:
        log = self.log()
        return {letter: log[letter] for letter in letters}


def close_loop(loop: AgentLoop) -> None:
    loop.trace.close()
    if loop.journal is not None:
        loop.journal.close()


def scripted(*turns: Turn) -> ScriptedProvider:
    return ScriptedProvider([tuple(t) for t in turns])


def closure_of(events: Sequence[TraceEvent]) -> tuple[str, bool]:
    """Each occurrence's terminal results (repair stubs as `interrupted`, or
    `unknown` where the effect may have happened: RETRY-3), its
    Background job's outcome, the run's end; and whether closure is one-to-one."""
    occs = [c.occ for e in events if isinstance(e, Assistant) for c in e.calls]
    terminal: dict[str, list[str]] = {o: [] for o in occs}
    jobs: dict[str, str] = {}
    status = "not ended"
    for e in events:
        if isinstance(e, Result):
            terminal.setdefault(e.occ, []).append(e.status.value)
        elif isinstance(e, Repair):
            for occ in e.stubbed:
                stub = "unknown" if occ in e.unknown else "interrupted"
                terminal.setdefault(occ, []).append(stub)
        elif isinstance(e, JobDone):
            jobs[e.occ] = e.outcome.value
        elif isinstance(e, RunEnd):
            status = e.status.value
    parts = []
    for occ, got in terminal.items():
        text = f"{occ} {'+'.join(got) or 'none'}"
        if occ in jobs:
            text += f" (job {jobs[occ]})"
        parts.append(text)
    one_to_one = list(terminal) == occs and all(len(v) == 1 for v in terminal.values())
    return f"{', '.join(parts) or 'no call'}; run {status}", one_to_one


def effects_text(values: Mapping[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def row_of(
    case: str,
    h: Harness,
    closure: str,
    effects: Mapping[str, object],
    observed: Mapping[str, object] | None = None,
    *,
    extra: Callable[[list[TraceEvent]], str] | None = None,
) -> FaultRow:
    """The row `h`'s run observed. `observed` defaults to the log's counts of
    the letters `effects` expects (most rows expect only log lines)."""
    if observed is None:
        observed = h.counts(*effects)
    events, conforms, note = h.events()
    got, one_to_one = closure_of(events)
    if extra is not None:
        got += extra(events)
    return FaultRow(
        case,
        closure,
        effects_text(effects),
        got,
        effects_text(observed),
        conforms,
        one_to_one,
        note,
    )


async def until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {WAIT:g}s for {what}")
        await asyncio.sleep(0.01)


async def until_running(h: Harness, letter: str) -> None:
    """Until the slow call has written `letter` and its spawn has returned.

    The settle makes the cancel land on a running command; a cancel during the
    spawn itself is tested on its own in tests/studies/test_faults.py.
    """
    await until(lambda: h.log()[letter] > 0, "the slow call to start")
    await asyncio.sleep(0.05)


class OnStart(LoopObserver):
    """Runs `action` (a coroutine) once when `occ`'s effect starts."""

    def __init__(self, occ: str, action: Callable[[], Awaitable[None]]) -> None:
        self.occ = occ
        self.action = action
        self.task: asyncio.Future[None] | None = None

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        if occ == self.occ and self.task is None:
            self.task = asyncio.ensure_future(self.action())
