"""Shared helpers of the dispatcher and scheduling tests (no tests here).

`OpTool` is an instrumented tool whose class, key, latency and failure come
from its input; `Probe` records when each call's work began and ended (and
the most calls running at once, overall and per key). `run_batch` runs one
batch through the real `AgentLoop` with a real trace file and asserts the
trace passes `metis_model.check_trace`; `intervals` and `sched_problems` are
an independent reading of the recorded effect intervals (by trace order).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_runtime import AgentLoop
from metis_runtime import LoopConfig
from metis_runtime import RunResult
from metis_runtime import ToolError
from metis_runtime.dispatch import Dispatcher
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import Classification
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolSpec
from metis_trace import CallClass
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from tests.runtime.test_loop_support import assert_conforms
from tests.runtime.test_loop_support import make_loop as scripted_loop
from tests.runtime.test_loop_support import read
from tests.runtime.test_loop_support import run_with

KIND = {
    CallClass.SAFE: ToolKind.READ_ONLY,
    CallClass.QUEUE: ToolKind.EDIT,
    CallClass.EXCLUSIVE: ToolKind.EXEC,
    CallClass.BACKGROUND: ToolKind.EXEC,
}
FOREGROUND = (CallClass.SAFE, CallClass.QUEUE, CallClass.EXCLUSIVE)


@attrs.define
class Probe:
    """What the tools saw: (tag, "start"|"end", perf_counter) per call."""

    log: list[tuple[str, str, float]] = attrs.Factory(list)
    active: int = 0
    max_active: int = 0
    by_class: Counter[str] = attrs.Factory(Counter)
    max_by_class: Counter[str] = attrs.Factory(Counter)
    by_key: Counter[str] = attrs.Factory(Counter)
    max_by_key: Counter[str] = attrs.Factory(Counter)

    def enter(self, tag: str, cls: str, key: str | None) -> None:
        self.log.append((tag, "start", time.perf_counter()))
        if cls == "background":
            return  # detached work is not foreground
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.by_class[cls] += 1
        self.max_by_class[cls] = max(self.max_by_class[cls], self.by_class[cls])
        if key is not None:
            self.by_key[key] += 1
            self.max_by_key[key] = max(self.max_by_key[key], self.by_key[key])

    def leave(self, tag: str, cls: str, key: str | None) -> None:
        self.log.append((tag, "end", time.perf_counter()))
        if cls == "background":
            return
        self.active -= 1
        self.by_class[cls] -= 1
        if key is not None:
            self.by_key[key] -= 1

    def order(self, what: str) -> list[str]:
        return [tag for tag, ev, _ in self.log if ev == what]


def classification_of(input: Mapping[str, Any]) -> Classification:
    """The class an input names (`cls`), its `key`, and that class's kind (`KIND`)."""
    cls = CallClass(input["cls"])
    return Classification(cls, input.get("key"), KIND[cls])


class ClassedTool(Tool):
    """A test tool whose class, key and kind are in its input (`classification_of`)."""

    def kind(self, input: ToolInput) -> ToolKind:
        return KIND[CallClass(input["cls"])]

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return classification_of(input)


class OpTool(ClassedTool):
    """`op`: input `cls`, optional `key`, `ms` (sleep), `fail` ("raise" or
    "error"), `tag`, and `append` (a file to read, sleep, then rewrite with
    the tag appended: a lost update if two ran at once)."""

    spec = ToolSpec("op", "instrumented test tool", {"type": "object", "properties": {}})

    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        tag, cls, key = str(input.get("tag", "?")), str(input["cls"]), input.get("key")
        self.probe.enter(tag, cls, key)
        try:
            target = input.get("append")
            if target is not None:
                path = ctx.workspace / target
                before = path.read_text()
                await asyncio.sleep(float(input.get("ms", 0)) / 1000)
                path.write_text(before + f"{tag}\n")
            elif input.get("ms", 0) > 0:
                await asyncio.sleep(float(input["ms"]) / 1000)
            else:
                await asyncio.sleep(0)
            fail = input.get("fail")
            if fail == "raise":
                raise ToolError(f"op {tag} failed")
            if fail == "error":
                return ToolOutput(f"op {tag} reported an error", is_error=True)
            return ToolOutput(f"op {tag} ok")
        finally:
            self.probe.leave(tag, cls, key)


def op(
    cls: CallClass | str,
    tag: str,
    *,
    ms: float = 0,
    key: str | None = None,
    fail: str | None = None,
    append: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"cls": str(CallClass(cls)), "tag": tag, "ms": ms}
    if key is not None:
        out["key"] = key
    if fail is not None:
        out["fail"] = fail
    if append is not None:
        out["append"] = append
    return out


@attrs.define
class BatchRun:
    result: RunResult
    header: TraceHeader
    events: list[TraceEvent]
    probe: Probe
    workspace: Path
    loop: AgentLoop

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.kind == kind]

    def statuses(self) -> dict[str, str]:
        return {e.occ: e.status.value for e in self.of("result")}


def make_loop(
    dispatcher: Dispatcher,
    turns: Sequence[Sequence[Mapping[str, Any]]],
    tmp_path: Path,
    *,
    tool: str = "op",
    files: Mapping[str, str] | None = None,
    job_wait: float | None = 30.0,
) -> tuple[AgentLoop, Probe, Path]:
    """A loop answering each of `turns` with calls of `tool`, then "done"."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (workspace / name).write_text(text)
    trace_path = tmp_path / "trace.jsonl"
    probe = Probe()
    script: list[Any] = [
        [ToolUseBlock(id=f"c{n}.{i}", name=tool, input=dict(x)) for i, x in enumerate(inputs)]
        for n, inputs in enumerate(turns)
    ]
    script.append([TextBlock(text="done")])
    loop = scripted_loop(
        script,
        workspace,
        trace_path,
        extra_tools=[OpTool(probe)],
        config=LoopConfig(job_wait=job_wait),
        env={"PATH": "/usr/bin:/bin"},
        dispatcher=dispatcher,
    )
    return loop, probe, trace_path


def run_batch(
    dispatcher: Dispatcher,
    inputs: Sequence[Mapping[str, Any]],
    tmp_path: Path,
    *,
    more_turns: Sequence[Sequence[Mapping[str, Any]]] = (),
    tool: str = "op",
    during: Callable[[AgentLoop, Probe], Awaitable[None]] | None = None,
    files: Mapping[str, str] | None = None,
    job_wait: float | None = 30.0,
    check: bool = True,
) -> BatchRun:
    """A turn of calls (`tool` with each input; then `more_turns`), then a
    final answer, through the real loop; the trace must conform."""
    loop, probe, trace_path = make_loop(
        dispatcher, [inputs, *more_turns], tmp_path, tool=tool, files=files, job_wait=job_wait
    )

    side = None if during is None else lambda: during(loop, probe)
    result = run_with(loop, "run the batch", side)
    header, events = read(trace_path)
    if check:
        assert_conforms(header, events)
    return BatchRun(result, header, events, probe, loop.ctx.workspace, loop)


# --- an independent reading of the recorded intervals ------------------------------


@attrs.define
class Interval:
    occ: str
    index: int
    cls: CallClass
    key: str | None
    start: int | None = None  # seq of effect_start
    end: int | None = None  # seq of effect_end or handshake
    t0: float = 0.0
    t1: float = 0.0

    @property
    def s(self) -> int:
        assert self.start is not None, f"{self.occ} never started"
        return self.start

    @property
    def e(self) -> int:
        assert self.end is not None, f"{self.occ} never ended"
        return self.end


def intervals(events: Sequence[TraceEvent]) -> dict[str, Interval]:
    """Per admitted-and-started call of the first batch: its foreground interval."""
    out: dict[str, Interval] = {}
    for e in events:
        if e.kind == "decision":
            out[e.occ] = Interval(e.occ, int(e.occ.split(".")[1]), e.cls, e.key)
        elif e.kind == "effect_start":
            out[e.occ].start, out[e.occ].t0 = e.seq, e.t
        elif e.kind in ("effect_end", "handshake"):
            out[e.occ].end, out[e.occ].t1 = e.seq, e.t
    return out


def sched_problems(events: Sequence[TraceEvent]) -> list[str]:
    """SCHED-1..3 restated over intervals (by seq), without the model's code."""
    ivs = [i for i in intervals(events).values() if i.start is not None]
    inf = 1 << 60
    problems: list[str] = []
    for a in ivs:
        a_end = a.end if a.end is not None else inf
        for b in ivs:
            if a is b:
                continue
            b_end = b.end if b.end is not None else inf
            overlap = a.start < b_end and b.start < a_end  # type: ignore[operator]
            if (
                a.cls is CallClass.EXCLUSIVE
                and b.cls in FOREGROUND
                and overlap
                and a.start < b.start  # type: ignore[operator]
            ):
                problems.append(f"SCHED-1 {a.occ} overlaps {b.occ}")
            if a.cls is CallClass.EXCLUSIVE and b.index < a.index and b_end > a.start:  # type: ignore[operator]
                problems.append(f"SCHED-3 {a.occ} started before earlier {b.occ} ended")
            if a.cls is CallClass.EXCLUSIVE and b.index > a.index and b.start < a_end:  # type: ignore[operator]
                problems.append(f"SCHED-3 later {b.occ} started before {a.occ} ended")
            if (
                a.cls is CallClass.QUEUE
                and b.cls is CallClass.QUEUE
                and a.key == b.key
                and a.index < b.index
                and b.start < a_end  # type: ignore[operator]
            ):
                problems.append(f"SCHED-2 {b.occ} started before {a.occ} ended on {a.key}")
    return problems


def overlapping(a: Interval, b: Interval) -> bool:
    return a.s < b.e and b.s < a.e
