"""One batch through the real loop, timed from its trace, and the bounds.

The span of a run is taken from the trace's own clock: from the batch's first
`effect_start` to its last `result`. The bounds no schedule can beat:

- the critical path: the longest call measured alone, or the longest chain
  the class rules force (`forced_chain`), whichever is longer;
- the work bound: the batch's CPU time (this process, its subprocesses and
  the search workers) over the cores;
- the in-process sum: calls run in this process share the GIL and the loop,
  so their times add up.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import LoopObserver
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import builtin_tools
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RunStatus
from metis_trace import TraceEvent
from metis_trace import read_trace

from .._sync import run_sync
from ._batches import Batch
from ._batches import reset_tree

DISPATCHERS = {"four-class": FourClassDispatcher, "serial": SerialDispatcher}


class DispatchError(RuntimeError):
    """A timed run that did not complete as the study requires."""


def cpu_seconds() -> float:
    """CPU time of this process, of its children that ended, and of its live
    children (the grep tool's search workers serve on and are not reaped)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime
    me, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


class CpuObserver(LoopObserver):
    """CPU time used from the batch's first effect start to the run's end
    (two readings: each reads /proc, which is not free). Used on runs of
    their own, never on the timed pairs."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        if self.first is None:
            self.first = cpu_seconds()

    def run_ended(self, result: RunResult) -> None:
        self.last = cpu_seconds()

    @property
    def seconds(self) -> float:
        return self.last - (self.first or 0.0)


async def io_run_async(
    root: Path,
    calls: Batch,
    dispatcher: str,
    tag: str,
    observer: LoopObserver | None = None,
) -> tuple[float, list[TraceEvent]]:
    """One batch through the loop (bypassPermissions, headless); its span
    (seconds) and the events of its trace, which must conform."""
    reset_tree(root)
    trace_path = root.parent / f"trace-{tag}.jsonl"
    trace_path.unlink(missing_ok=True)
    registry = ToolRegistry(builtin_tools())
    gate = Gate(Policy(), Mode.BYPASS, root, Route.HEADLESS, headless_default=Decision.DENY)
    header = make_header(mode=Mode.BYPASS, tools=registry.names(), route=Route.HEADLESS)
    blocks = [ToolUseBlock(id=f"c{i}", name=t, input=x) for i, (t, x) in enumerate(calls)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    loop = AgentLoop(
        ScriptedProvider([blocks, [TextBlock(text="done")]]),
        registry,
        gate,
        ToolContext(root, env, JobManager()),
        TraceWriter(trace_path, header),
        dispatcher=DISPATCHERS[dispatcher](),
        observer=observer,
    )
    try:
        result = await loop.run("go")
    finally:
        loop.trace.close()
    if result.status is not RunStatus.COMPLETED:
        raise DispatchError(f"{tag}: the run ended {result.status.value}")
    with trace_path.open(encoding="utf-8") as fh:
        header, events = read_trace(fh)
    report = check_trace(events, header)
    if not report.ok:
        raise DispatchError(f"{trace_path}: {report.first}")
    statuses = {e.occ: e.status.value for e in events if e.kind == "result"}
    if set(statuses.values()) != {"ok"}:
        raise DispatchError(f"{tag}: not every call succeeded: {statuses}")
    batch = [e for e in events if getattr(e, "occ", "").startswith("1.")]
    first = min(e.t for e in batch if e.kind == "effect_start")
    last = max(e.t for e in batch if e.kind == "result")
    return last - first, events


def io_run(
    root: Path, calls: Batch, dispatcher: str, tag: str, observer: LoopObserver | None = None
) -> tuple[float, list[TraceEvent]]:
    return run_sync(io_run_async(root, calls, dispatcher, tag, observer))


def durations(events: Sequence[TraceEvent]) -> dict[str, float]:
    """Each call's own time: effect start to effect end (or handshake)."""
    start = {e.occ: e.t for e in events if e.kind == "effect_start"}
    return {e.occ: e.t - start[e.occ] for e in events if e.kind in ("effect_end", "handshake")}


def forced_chain(calls: Batch, alone: Mapping[int, float], events: Sequence[TraceEvent]) -> float:
    """The longest path the class rules force, with each call's isolated time:
    per segment between Exclusive calls, the longest call or the sum of one
    key's Queue calls; Exclusive calls add up."""
    cls = {int(e.occ.split(".")[1]): (e.cls, e.key) for e in events if e.kind == "decision"}
    total, segment, keys = 0.0, 0.0, dict[str | None, float]()
    for i in range(len(calls)):
        c, key = cls[i]
        if c is CallClass.EXCLUSIVE:
            total += max(segment, *keys.values(), 0.0) + alone[i]
            segment, keys = 0.0, {}
        elif c is CallClass.QUEUE:
            keys[key] = keys.get(key, 0.0) + alone[i]
        else:
            segment = max(segment, alone[i])
    return total + max(segment, *keys.values(), 0.0)
