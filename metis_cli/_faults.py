"""`metis faults`: the fault matrix, run against the real runtime.

Each row drives `AgentLoop` with a scripted (or replayed) provider, the real
tools in a temporary workspace, the production permission gate and a real
trace file and journal, injects one fault, and states what must come of it:

- the closure: every call occurrence's one terminal result (`interrupted`
  or `unknown` for a repair stub), and how the run ended; one-to-one means each
  occurrence has exactly one, observed from the trace, which must also pass
  `metis_model.check_trace`;
- the effects: side effects counted on disk (lines appended to `log.txt`
  by each call, files written or rolled back), so a duplicated or lost
  effect shows as a wrong count.

A row holds when the observed closure and effects equal the expected ones,
closure is one-to-one and the trace conforms. Register with
`cli.add_command(faults)`; exit 0 when every row holds, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import click

import metis_cli
from metis_model import check_trace
from metis_model.trace import (
    Assistant,
    CallClass,
    EffectEnd,
    JobDone,
    Mode,
    Repair,
    Result,
    Route,
    RuleBehavior,
    RunEnd,
    Source,
    ToolKind,
    TraceEvent,
)
from metis_runtime import (
    AgentLoop,
    Journal,
    JournalState,
    LoopConfig,
    LoopObserver,
    TraceWriter,
    make_header,
    scan_trace,
)
from metis_runtime._input import read_trace_path
from metis_runtime.dispatch import Dispatcher, FourClassDispatcher, SerialDispatcher
from metis_runtime.permissions import Gate, Policy
from metis_runtime.providers import (
    Cassette,
    ModelRequest,
    Provider,
    ReplayProvider,
    ScriptedProvider,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    load_cassette,
)
from metis_runtime.tools import (
    Classification,
    JobManager,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    ToolRegistry,
    ToolSpec,
    atomic_write,
    builtin_tools,
    resolve_path,
)

from ._output import EXIT_OK, EXIT_VIOLATION, emit_json, table

_ROOT = Path(metis_cli.__file__).resolve().parent.parent
RECORDED_STREAM = (
    _ROOT / "tests/data/streams/anthropic/test_anthropic_local_shell_toolset_stream.yaml"
)
_WAIT = 20.0  # seconds any single wait in a row may take before the row fails
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


def _log(letter: str) -> str:
    return f"echo {letter} >> log.txt"


class _Harness:
    """A workspace, a trace, a journal and the loop that writes them."""

    def __init__(
        self, workdir: Path, name: str, *, fsync: bool = False, dispatcher: str = "serial"
    ) -> None:
        self.dir = workdir / name
        self.dispatcher = dispatcher
        self.ws = self.dir / "ws"
        self.ws.mkdir(parents=True, exist_ok=True)
        self.trace_path = self.dir / "trace.jsonl"
        self.journal_path = self.dir / "trace.jsonl.journal"
        self.fsync = fsync

    def gate(self) -> Gate:
        policy = Policy()
        for pattern in ("Bash", "Write", "Edit", "explode", "multi_write"):
            policy.add(Source.PROJECT, RuleBehavior.ALLOW, pattern)
        policy.add(Source.PROJECT, RuleBehavior.DENY, "Bash(rm:*)")
        return Gate(policy, Mode.DEFAULT, self.ws, Route.HEADLESS)

    def loop(
        self, provider: Provider, observer: LoopObserver | None = None, *, resume: bool = False
    ) -> tuple[AgentLoop, JournalState | None]:
        """A loop on a new trace, or (`resume`) on the existing one; with the
        journal state when resuming."""
        registry = ToolRegistry([*builtin_tools(), ExplodeTool(), MultiWriteTool()])
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
            config=LoopConfig(job_wait=_WAIT),
        )
        return loop, state

    async def run(self, provider: Provider, observer: LoopObserver | None = None) -> None:
        loop, _ = self.loop(provider, observer)
        try:
            await loop.run("the task")
        finally:
            _close(loop)

    async def resume(self, provider: Provider) -> None:
        loop, state = self.loop(provider, resume=True)
        assert state is not None
        try:
            await loop.resume(state, scan_trace(loop.trace.events))
        finally:
            _close(loop)

    # --- what happened ---------------------------------------------------------------

    def events(self) -> tuple[list[TraceEvent], bool, str]:
        header, events, line_of = read_trace_path(self.trace_path)
        report = check_trace(events, header, source=str(self.trace_path), line_of=line_of)
        return events, report.ok, report.first.one_line() if report.first is not None else ""

    def log(self) -> Counter[str]:
        path = self.ws / "log.txt"
        return Counter(path.read_text().split()) if path.exists() else Counter()

    def counts(self, *letters: str) -> dict[str, object]:
        log = self.log()
        return {letter: log[letter] for letter in letters}


def _close(loop: AgentLoop) -> None:
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


def _effects(values: Mapping[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def _row(
    case: str,
    h: _Harness,
    closure: str,
    effects: Mapping[str, object],
    observed: Mapping[str, object],
    *,
    extra: Callable[[list[TraceEvent]], str] | None = None,
) -> FaultRow:
    events, conforms, note = h.events()
    got, one_to_one = closure_of(events)
    if extra is not None:
        got += extra(events)
    return FaultRow(
        case, closure, _effects(effects), got, _effects(observed), conforms, one_to_one, note
    )


async def _until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {_WAIT:g}s for {what}")
        await asyncio.sleep(0.01)


async def _running(h: _Harness, letter: str) -> None:
    """Until the slow call has written `letter` and its spawn has returned.

    The settle makes the cancel land on a running command; a cancel during the
    spawn itself is tested on its own in tests/conformance/test_faults.py.
    """
    await _until(lambda: h.log()[letter] > 0, "the slow call to start")
    await asyncio.sleep(0.05)


class _OnStart(LoopObserver):
    """Runs `action` (a coroutine) once when `occ`'s effect starts."""

    def __init__(self, occ: str, action: Callable[[], Awaitable[None]]) -> None:
        self.occ = occ
        self.action = action
        self.task: asyncio.Future[None] | None = None

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        if occ == self.occ and self.task is None:
            self.task = asyncio.ensure_future(self.action())


# --- the rows ----------------------------------------------------------------------------------

SLOW = "echo b >> log.txt; sleep 30; echo B >> log.txt"  # `B` only if it ran to the end
BATCH_WITH_SLOW = (bash("t1", _log("a")), bash("t2", SLOW), bash("t3", _log("c")))


def tool_raises(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "raises", dispatcher=dispatcher)
    batch = (bash("t1", _log("a")), ToolUseBlock("t2", "explode", {}), bash("t3", _log("c")))
    asyncio.run(h.run(scripted(batch, DONE)))
    return _row(
        "a tool raises mid-batch",
        h,
        "1.0 ok, 1.1 error, 1.2 ok; run completed",
        {"a": 1, "c": 1},
        h.counts("a", "c"),
    )


def tool_hangs(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "hangs", dispatcher=dispatcher)
    hang = bash("t1", "echo s >> log.txt; sleep 30; echo e >> log.txt", timeout=0.5)
    asyncio.run(h.run(scripted((hang, bash("t2", _log("c"))), DONE)))
    return _row(
        "a tool hangs past its timeout",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"s": 1, "e": 0, "c": 1},
        h.counts("s", "e", "c"),
    )


def cancel_mid_batch(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "cancel", dispatcher=dispatcher)
    holder: list[AgentLoop] = []

    async def press_stop() -> None:
        await _running(h, "b")
        holder[0].cancel("the user pressed stop")

    async def main() -> None:
        loop, _ = h.loop(scripted(BATCH_WITH_SLOW, DONE), _OnStart("1.1", press_stop))
        holder.append(loop)
        try:
            await loop.run("the task")
        finally:
            _close(loop)

    asyncio.run(main())
    return _row(
        "cancel in the middle of a batch",
        h,
        "1.0 ok, 1.1 cancelled, 1.2 skipped; run cancelled",
        {"a": 1, "b": 1, "B": 0, "c": 0},
        h.counts("a", "b", "B", "c"),
    )


def interrupt_then_resume(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "interrupt", dispatcher=dispatcher)
    running: list[asyncio.Future[Any]] = []

    async def interrupt() -> None:
        await _running(h, "b")
        running[0].cancel()  # what Ctrl-C does to the run's task

    async def main() -> None:
        loop, _ = h.loop(scripted(BATCH_WITH_SLOW, DONE), _OnStart("1.1", interrupt))
        task = asyncio.ensure_future(loop.run("the task"))
        running.append(task)
        await asyncio.wait((task,))
        _close(loop)
        if not task.cancelled():
            raise AssertionError(f"the run was not interrupted: {task.result()}")
        await h.resume(scripted(DONE))

    asyncio.run(main())
    return _row(
        "interrupt, then resume",
        h,
        "1.0 ok, 1.1 unknown, 1.2 interrupted; run completed",
        {"a": 1, "b": 1, "B": 0, "c": 0},
        h.counts("a", "b", "B", "c"),
    )


def cut_stream_cassette(path: Path = RECORDED_STREAM) -> Cassette:
    """The recorded Anthropic tool_use stream, rewritten in memory: block 0
    is a complete `echo a` call, block 1 an `echo b` call whose arguments are
    cut off mid-JSON (the connection dropped)."""
    recorded = load_cassette(path)
    first = recorded.interactions[0]
    body = first.body
    head = body[: body.index("event: content_block_start")]
    block = body[len(head) : body.index("event: message_delta")]

    def rewrite(index: int, call_id: str, command: str) -> str:
        out = []
        for chunk in block.split("\n\n"):
            lines = chunk.split("\n")
            for i, line in enumerate(lines):
                if not line.startswith("data: "):
                    continue
                data = json.loads(line[len("data: ") :])
                if "index" in data:
                    data["index"] = index
                if data.get("type") == "content_block_start":
                    data["content_block"]["id"] = call_id
                delta = data.get("delta", {})
                if delta.get("type") == "input_json_delta" and delta.get("partial_json"):
                    delta["partial_json"] = json.dumps({"command": command})
                lines[i] = "data: " + json.dumps(data)
            out.append("\n".join(lines))
        return "\n\n".join(out)

    second = rewrite(1, "toolu_cut", _log("b"))
    body = head + rewrite(0, "toolu_whole", _log("a")) + second
    cut = body.rindex("echo b") + len("echo b")  # inside block 1's arguments
    return Cassette(recorded.path, (attrs.evolve(first, body=body[:cut]),))


def stream_cut(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "stream-cut", dispatcher=dispatcher)
    asyncio.run(h.run(ReplayProvider(cut_stream_cassette(), chunk_size=97)))
    return _row(
        "provider stream cut inside a tool_use",
        h,
        "no call; run failed",
        {"a": 0, "b": 0},
        h.counts("a", "b"),
    )


def malformed_arguments(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "malformed", dispatcher=dispatcher)
    batch = (
        ToolUseBlock("m1", "bash", {}, input_error="Expecting ',' delimiter: line 1 column 31"),
        ToolUseBlock("m2", "bash", {"cmd": _log("x")}),  # schema: no `command`
        ToolUseBlock("m3", "no_such_tool", {"command": _log("y")}),
        bash("m4", _log("c")),
    )
    asyncio.run(h.run(scripted(batch, DONE)))
    return _row(
        "malformed arguments",
        h,
        "1.0 error, 1.1 error, 1.2 error, 1.3 ok; run completed",
        {"x": 0, "y": 0, "c": 1},
        h.counts("x", "y", "c"),
    )


def denial_mid_batch(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "denial", dispatcher=dispatcher)
    (h.ws / "keep.txt").write_text("keep\n")
    batch = (bash("t1", _log("a")), bash("t2", "rm -f keep.txt"), bash("t3", _log("c")))
    asyncio.run(h.run(scripted(batch, DONE)))
    return _row(
        "a denial in the middle of a batch",
        h,
        "1.0 ok, 1.1 denied, 1.2 ok; run completed",
        {"a": 1, "c": 1, "keep.txt": "present"},
        {**h.counts("a", "c"), "keep.txt": _present(h.ws / "keep.txt")},
    )


def background_fails(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "background", dispatcher=dispatcher)
    job = bash("j1", "echo s >> log.txt; sleep 0.3; exit 3", background=True)
    asyncio.run(h.run(scripted((job,), DONE)))
    return _row(
        "a background job fails after its handshake",
        h,
        "1.0 ok (job error); run completed",
        {"s": 1},
        h.counts("s"),
    )


def duplicate_ids(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "duplicate-ids", dispatcher=dispatcher)
    provider = scripted(
        (bash("dup", _log("a")), bash("dup", _log("b"))), (bash("dup", _log("c")),), DONE
    )
    asyncio.run(h.run(provider))

    def sent(events: list[TraceEvent]) -> str:
        # What went back to the provider: one tool_result per occurrence.
        counts = [
            sum(
                isinstance(b, ToolResultBlock) and b.tool_use_id == "dup"
                for b in r.messages[-1].content
            )
            for r in provider.requests[1:]
        ]
        return f"; sent {'+'.join(map(str, counts))} results for id dup"

    return _row(
        "duplicate ids within a message and across turns",
        h,
        "1.0 ok, 1.1 ok, 2.0 ok; run completed; sent 2+1 results for id dup",
        {"a": 1, "b": 1, "c": 1},
        h.counts("a", "b", "c"),
        extra=sent,
    )


KILL_SLOW = (
    "echo b >> log.txt; sleep 60 & echo $! > m.tmp; mv m.tmp started.marker; wait; "
    "echo B >> log.txt"
)


def _kill_batch(ids: tuple[str, str, str]) -> tuple[ToolUseBlock, ...]:
    return (bash(ids[0], _log("a")), bash(ids[1], KILL_SLOW), bash(ids[2], _log("c")))


async def _never(request: ModelRequest, turn: int) -> Turn:
    await asyncio.sleep(3600)  # the provider still streaming when the kill comes
    return DONE


def _background_then_wait() -> ScriptedProvider:
    job = bash("j1", KILL_SLOW.replace("echo b", "echo s").replace("echo B", "echo e"))
    job = ToolUseBlock(job.id, job.name, {**job.input, "background": True})

    async def script(request: ModelRequest, turn: int) -> Turn:
        return (job,) if turn == 0 else await _never(request, turn)

    return ScriptedProvider(script)


KILLED_SCRIPTS: dict[str, Callable[[], ScriptedProvider]] = {
    "distinct-ids": lambda: scripted(_kill_batch(("k1", "k2", "k3"))),
    "one-id": lambda: scripted(_kill_batch(("k", "k", "k"))),
    "background": _background_then_wait,
}


def killed_child(directory: str, script: str, dispatcher: str) -> None:
    """The process the SIGKILL rows kill: runs a script that never ends."""
    h = _Harness(Path(directory).parent, Path(directory).name, fsync=True, dispatcher=dispatcher)
    asyncio.run(h.run(KILLED_SCRIPTS[script]()))


def _sigkill_then_resume(workdir: Path, name: str, script: str, dispatcher: str) -> _Harness:
    h = _Harness(workdir, name, fsync=True, dispatcher=dispatcher)
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    code = "import sys; from metis_cli._faults import killed_child; killed_child(*sys.argv[1:])"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(h.dir), script, dispatcher],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    marker = h.ws / "started.marker"
    sleeper: int | None = None
    try:
        deadline = time.monotonic() + _WAIT * 3
        while not marker.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"the child exited early: {proc.stderr.read()!r}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise TimeoutError("the slow call never started")
            time.sleep(0.02)
        sleeper = int(marker.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=_WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if sleeper is not None:  # the bash group outlives the killed process: end it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(sleeper), signal.SIGKILL)
        if proc.stderr is not None:
            proc.stderr.close()
    if proc.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the child was not killed (exit {proc.returncode})")
    asyncio.run(h.resume(scripted(DONE)))
    return h


def sigkill_then_resume(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill", "distinct-ids", dispatcher)
    return _row(
        "SIGKILL mid-batch, resumed from the journal",
        h,
        "1.0 ok, 1.1 unknown, 1.2 interrupted; run completed",
        {"a": 1, "b": 1, "B": 0, "c": 0},
        h.counts("a", "b", "B", "c"),
    )


def sigkill_duplicate_ids(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill-duplicate-ids", "one-id", dispatcher)
    return _row(
        "SIGKILL mid-batch with one id thrice, resumed",
        h,
        "1.0 ok, 1.1 unknown, 1.2 interrupted; run completed",
        {"a": 1, "b": 1, "B": 0, "c": 0},
        h.counts("a", "b", "B", "c"),
    )


def sigkill_background(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill-background", "background", dispatcher)
    return _row(
        "SIGKILL while a background job runs, resumed",
        h,
        "1.0 ok (job cancelled); run completed",
        {"s": 1, "e": 0},
        h.counts("s", "e"),
    )


def _present(path: Path) -> str:
    return "present" if path.exists() else "absent"


def partial_edit_rolled_back(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "rollback", dispatcher=dispatcher)
    (h.ws / "one.txt").write_text("OLD\n")
    files = {"one.txt": "NEW\n", "sub/two.txt": "NEW\n", "three.txt": "NEW\n"}
    batch = (
        ToolUseBlock("w1", "multi_write", {"files": files, "fail_after": 2}),
        bash("w2", _log("c")),
    )
    asyncio.run(h.run(scripted(batch, DONE)))
    observed = {
        "one.txt": (h.ws / "one.txt").read_text().strip(),
        "sub/": _present(h.ws / "sub"),
        "three.txt": _present(h.ws / "three.txt"),
        **h.counts("c"),
    }
    return _row(
        "partial file mutation, rolled back",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"one.txt": "OLD", "sub/": "absent", "three.txt": "absent", "c": 1},
        observed,
    )


def partial_exec_kept(workdir: Path, dispatcher: str) -> FaultRow:
    h = _Harness(workdir, "exec-partial", dispatcher=dispatcher)
    asyncio.run(h.run(scripted((bash("x1", "printf partial > partial.txt; exit 7"),), DONE)))
    events, _, _ = h.events()
    committed = [e.committed for e in events if isinstance(e, EffectEnd)]
    return _row(
        "partial exec mutation (exec is never rolled back)",
        h,
        "1.0 error; run completed",
        {"partial.txt": "present", "committed": [True]},
        {"partial.txt": _present(h.ws / "partial.txt"), "committed": committed},
    )


FAULTS: dict[str, Callable[[Path, str], FaultRow]] = {
    "raises": tool_raises,
    "hangs": tool_hangs,
    "cancel": cancel_mid_batch,
    "interrupt": interrupt_then_resume,
    "stream-cut": stream_cut,
    "malformed": malformed_arguments,
    "denial": denial_mid_batch,
    "background": background_fails,
    "duplicate-ids": duplicate_ids,
    "sigkill": sigkill_then_resume,
    "sigkill-duplicate-ids": sigkill_duplicate_ids,
    "sigkill-background": sigkill_background,
    "rollback": partial_edit_rolled_back,
    "exec-partial": partial_exec_kept,
}


def run_fault(name: str, workdir: Path, dispatcher: str = "serial") -> FaultRow:
    """One row (in `workdir/<name>`); a row whose driver crashes is reported,
    not raised."""
    try:
        return FAULTS[name](workdir, dispatcher)
    except Exception as exc:
        text = f"crashed: {type(exc).__name__}: {exc}"
        return FaultRow(name, "-", "-", text, "-", False, False, text)


def run_fault_matrix(workdir: Path, dispatcher: str = "serial") -> list[FaultRow]:
    """Every row, each in its own directory under `workdir`, with the
    loop's dispatcher `serial` or `four-class`."""
    workdir.mkdir(parents=True, exist_ok=True)
    return [run_fault(name, workdir, dispatcher) for name in FAULTS]


HEADERS = (
    "case",
    "expected closure",
    "expected effects",
    "observed closure",
    "observed effects",
    "trace conforms",
    "holds",
)


def matrix_table(rows: Sequence[FaultRow]) -> str:
    return table(
        HEADERS,
        [
            (
                r.case,
                r.expected_closure,
                r.expected_effects,
                r.observed_closure,
                r.observed_effects,
                "yes" if r.trace_conforms else "NO",
                "yes" if r.holds else "NO",
            )
            for r in rows
        ],
    )


@click.command("faults")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep every row's workspace and trace here (default: a temporary directory).",
)
@click.option(
    "--dispatcher",
    type=click.Choice(tuple(DISPATCHERS)),
    default="serial",
    show_default=True,
    help="The loop's dispatcher.",
)
def faults(as_json: bool, workdir: Path | None, dispatcher: str) -> None:
    """Run the fault matrix against the real runtime; exit 1 if a row fails."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="metis-f-")))
        rows = run_fault_matrix(workdir, dispatcher)
    if as_json:
        emit_json([r.to_json() for r in rows])
    else:
        click.echo(matrix_table(rows))
        for r in rows:
            if not r.holds and r.note:
                click.echo(f"{r.case}: {r.note}")
        held = sum(r.holds for r in rows)
        click.echo(f"{held}/{len(rows)} rows hold")
    sys.exit(EXIT_OK if all(r.holds for r in rows) else EXIT_VIOLATION)
