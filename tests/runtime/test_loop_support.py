"""Shared helpers of the loop, trace, journal and `metis run` tests.

(Named test_*.py so it sits under the loop tests' path; it has no tests.)
Every trace these helpers produce is checked with `metis_model.check_trace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import LoopConfig
from metis_runtime import LoopObserver
from metis_runtime import PassThroughGate
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import GateLike
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import ScriptFunction
from metis_runtime.tools import Classification
from metis_runtime.tools import JobManager
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import ToolSpec
from metis_runtime.tools import builtin_tools
from metis_trace import CallClass
from metis_trace import Mode
from metis_trace import Route
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import read_trace
from tests import _metis_cli


def read(path: Path) -> tuple[TraceHeader, list[TraceEvent]]:
    with path.open(encoding="utf-8") as fh:
        return read_trace(fh)


def assert_conforms(header: TraceHeader, events: Sequence[TraceEvent]) -> None:
    report = check_trace(events, header)
    assert report.ok, f"{report.first}"


def kinds(events: Sequence[TraceEvent]) -> list[str]:
    return [e.kind for e in events]


def of_kind(events: Sequence[TraceEvent], kind: str) -> list[Any]:
    return [e for e in events if e.kind == kind]


def results_by_occ(events: Sequence[TraceEvent]) -> dict[str, tuple[str, str]]:
    return {e.occ: (e.status.value, e.content) for e in of_kind(events, "result")}


# --- test tools -------------------------------------------------------------------


class FuncTool(Tool):
    """A tool whose run is a given coroutine function; class and kind fixed."""

    def __init__(
        self,
        name: str,
        run: Callable[[ToolInput, ToolContext], Awaitable[ToolOutput]],
        *,
        cls: CallClass = CallClass.SAFE,
        kind: ToolKind = ToolKind.READ_ONLY,
    ) -> None:
        self._spec = ToolSpec(name, f"test tool {name}", {"type": "object", "properties": {}})
        self._run = run
        self._cls = cls
        self._kind = kind

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def kind(self, input: ToolInput) -> ToolKind:
        return self._kind

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return Classification(self._cls, None, self._kind)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        return await self._run(input, ctx)


# --- running the loop in process --------------------------------------------------


class Recorder(LoopObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        self.lines.append(f"start {occ} {tool}")

    def call_finished(
        self, occ: str, tool: str, status: Any, content: str, seconds: float | None
    ) -> None:
        self.lines.append(f"end {occ} {tool} {status.value}")

    def note(self, text: str) -> None:
        self.lines.append(f"note {text}")


@attrs.define
class Run:
    result: RunResult
    header: TraceHeader
    events: list[TraceEvent]
    provider: ScriptedProvider
    workspace: Path
    trace_path: Path
    loop: AgentLoop
    observer: Recorder


def make_loop(
    script: ScriptFunction | Sequence[Any],
    workspace: Path,
    trace_path: Path,
    *,
    mode: Mode = Mode.BYPASS,
    route: Route = Route.INTERACTIVE,
    gate: GateLike[Any] | None = None,
    extra_tools: Sequence[Tool] = (),
    config: LoopConfig | None = None,
    journal: Journal | None = None,
    trace: TraceWriter | None = None,
    env: Mapping[str, str] | None = None,
    journal_path: Path | None = None,
    dispatcher: Dispatcher | None = None,
    **hooks: Any,
) -> AgentLoop:
    """A scripted loop over the builtin tools (and `extra_tools`) in `workspace`;
    with `journal_path`, on a new journal there; `hooks` go to `AgentLoop`."""
    registry = ToolRegistry([*builtin_tools(), *extra_tools])
    if gate is None:
        gate = PassThroughGate(mode, workspace, route=route)
    if trace is None:
        header = make_header(mode=mode, tools=registry.names(), route=route)
        trace = TraceWriter(trace_path, header)
    if journal is None and journal_path is not None:
        journal = Journal.create(journal_path, trace.header.run_id, {}, fsync=False)
    ctx = ToolContext(workspace, dict(env if env is not None else os.environ), JobManager())
    return AgentLoop(
        ScriptedProvider(script),
        registry,
        gate,
        ctx,
        trace,
        journal=journal,
        dispatcher=dispatcher,
        observer=Recorder(),
        config=config,
        **hooks,
    )


def run_with(
    loop: AgentLoop, task: str, during: Callable[[], Awaitable[None]] | None = None
) -> RunResult:
    """Run `loop` on `task` to its end, `during()` alongside (cancelled once
    the run ends); the loop's trace is closed after."""

    async def main() -> RunResult:
        if during is None:
            return await loop.run(task)
        side = asyncio.ensure_future(during())
        try:
            return await loop.run(task)
        finally:
            side.cancel()

    try:
        return asyncio.run(main())
    finally:
        loop.trace.close()


def run_loop(
    script: ScriptFunction | Sequence[Any],
    tmp_path: Path,
    *,
    task: str = "do the task",
    during: Callable[[AgentLoop], Awaitable[None]] | None = None,
    **kwargs: Any,
) -> Run:
    """Run a scripted agent in `tmp_path/ws`; the trace must conform."""
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    trace_path = tmp_path / "trace.jsonl"
    loop = make_loop(script, workspace, trace_path, **kwargs)
    result = run_with(loop, task, None if during is None else lambda: during(loop))
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert isinstance(loop.provider, ScriptedProvider)
    assert isinstance(loop.observer, Recorder)
    return Run(result, header, events, loop.provider, workspace, trace_path, loop, loop.observer)


def stream_trace(header: TraceHeader) -> tuple[TraceWriter, io.StringIO]:
    buf = io.StringIO()
    return TraceWriter(buf, header), buf


# --- replay scenarios written by tests ----------------------------------------------


def _sse(event: str, data: Mapping[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def anthropic_body(message_id: str, blocks: Sequence[Mapping[str, Any]]) -> str:
    """An Anthropic Messages SSE body for `blocks`: {"text": ...} or
    {"tool": name, "id": id, "input": {...}}."""
    usage = {"input_tokens": 10, "output_tokens": 1}
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    has_tool = False
    for i, block in enumerate(blocks):
        if "tool" in block:
            has_tool = True
            start = {"type": "tool_use", "id": block["id"], "name": block["tool"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            )
        )
        out.append(
            _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = "tool_use" if has_tool else "end_turn"
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


def write_scenario(
    path: Path,
    turns: Sequence[Sequence[Mapping[str, Any]]],
    *,
    prompt: str = "test task",
    files: Mapping[str, str] | None = None,
) -> Path:
    """A replay scenario YAML: one Anthropic interaction per turn."""
    interactions = [
        {
            "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages"},
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["text/event-stream"]},
                "body": {"string": anthropic_body(f"msg_{n}", blocks)},
            },
        }
        for n, blocks in enumerate(turns)
    ]
    data = {
        "description": "written by a test",
        "prompt": prompt,
        "workspace": {"files": dict(files or {})},
        "interactions": interactions,
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# A bash command for a scenario: a call that runs until killed, and shows it
# started by leaving its sleeper's pid in `started.marker` in the workspace.
SLOW_MARKED_CALL = "sleep 60 & echo $! > m.tmp; mv m.tmp started.marker; wait"


def invoke_run(*args: str) -> tuple[int, str, str]:
    """`metis run` in this process (click's runner): exit code, stdout, stderr."""
    from click.testing import CliRunner

    from metis_cli._run import run

    got = CliRunner().invoke(run, list(args), catch_exceptions=False)
    return got.exit_code, got.stdout, got.stderr


def one_line_error(code: int, stderr: str) -> str:
    """The one line of a `metis run` usage error (exit 2, no traceback)."""
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metis run: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def metis_run_argv(*args: str) -> list[str]:
    """`metis run` as a subprocess (`python -m metis_cli._run`)."""
    return [sys.executable, "-m", "metis_cli._run", *args]


def replay_run_argv(ws: Path, scenario: Path, *args: str) -> list[str]:
    """`metis run` of a replayed scenario in `ws`, headless and quiet, every
    call allowed (bypassPermissions)."""
    return metis_run_argv(
        "--workspace",
        str(ws),
        *args,
        "--scenario",
        str(scenario),
        "--provider",
        "replay",
        "--mode",
        "bypassPermissions",
        "--headless",
        "-q",
    )


def resume_run(trace: Path, env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`metis run --resume --trace TRACE -q` to its end; it must exit 0."""
    done = subprocess.run(
        metis_run_argv("--resume", "--trace", str(trace), "-q"),
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def metis_run(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`metis run --quiet ARGS` to its end (no provider keys in its environment)."""
    return subprocess.run(
        metis_run_argv("--quiet", *args),
        env=_metis_cli.env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def sigint_when(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    ready: Callable[[], bool],
    timeout: float,
    what: str = "the run never got ready",
) -> tuple[int, str]:
    """Run `argv` until `ready()` (within `timeout` s, or fail saying `what`),
    interrupt it there with SIGINT as a user's Ctrl-C would, and return its
    exit status and stderr once it has ended."""
    proc = subprocess.Popen(
        argv, env=dict(env), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, what
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


def sigkill_when_marked(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, marker: Path, timeout: float
) -> int:
    """Run `argv` until `marker` appears (a SLOW_MARKED_CALL started), SIGKILL
    it there, kill the sleeper's process group that outlives it, and return
    the exit status (-SIGKILL)."""
    proc = subprocess.Popen(
        argv, env=dict(env), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    sleeper: int | None = None
    try:
        deadline = time.monotonic() + timeout
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the slow call never started"
            time.sleep(0.02)
        sleeper = int(marker.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if sleeper is not None:  # the bash group outlives its parent: clean it up
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(sleeper), signal.SIGKILL)
        assert proc.stderr is not None
        proc.stderr.close()
    return proc.returncode
