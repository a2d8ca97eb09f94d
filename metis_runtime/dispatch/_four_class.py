"""The four-class dispatcher: Safe, Queue, Exclusive and Background calls
mediated by the rules of specs/scheduler.md (SCHED-1..5).

The batch is cut at its Exclusive calls into segments. Within a segment every
call is admitted at once, and waits for the calls it depends on: a Queue call
for its key's earlier call (FIFO per key), a Safe call and a Queue call whose
footprints conflict (one reads where the other writes, SCHED-6) the later for
the earlier. A ready Safe call starts when one of `safe_concurrency` slots is
free, a ready Queue call at once, a Background call at once (its task ends at
the handshake). An Exclusive call starts when everything admitted before it
has ended, and the next segment is admitted only when it has ended.

Scheduling is done in done-callbacks, not by a polling coroutine: a call
that ends starts its successors in the same loop iteration. Safe calls run
in at most `safe_concurrency` worker tasks that take the waiting Safe calls
in order, one after another (a worker per call would cost a task, a
callback and a loop iteration each); every other call has a task of its own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_trace import CallClass

from .._errors import ConfigError
from ..tools import ToolContext
from ..tools._footprint import overlap
from ._base import EffectSink
from ._base import PlannedCall
from ._base import execute_call
from ._base import skip_call

# What `_BatchRun.running` maps a Safe worker's task to: it runs many calls.
_WORKER = -1


class FourClassDispatcher:
    """Runs admitted calls concurrently where the class rules allow it.

    `safe_concurrency` bounds the Safe calls running at once (Queue calls are
    bounded by their keys, Background calls end at their handshake).
    """

    def __init__(self, safe_concurrency: int = 8) -> None:
        if isinstance(safe_concurrency, bool) or not isinstance(safe_concurrency, int):
            raise ConfigError(f"safe_concurrency must be an integer, got {safe_concurrency!r}")
        if safe_concurrency < 1:
            raise ConfigError(f"safe_concurrency must be at least 1, got {safe_concurrency}")
        self.safe_concurrency = safe_concurrency

    def __repr__(self) -> str:
        return f"FourClassDispatcher(safe_concurrency={self.safe_concurrency})"

    async def run_batch(
        self,
        calls: Sequence[PlannedCall],
        ctx: ToolContext,
        sink: EffectSink,
        cancel: asyncio.Event,
    ) -> None:
        if not calls:
            return
        await _BatchRun(calls, ctx, sink, cancel, self.safe_concurrency).run()


class _BatchRun:
    """The state of one `run_batch`; lives on the event loop's thread only."""

    def __init__(
        self,
        calls: Sequence[PlannedCall],
        ctx: ToolContext,
        sink: EffectSink,
        cancel: asyncio.Event,
        bound: int,
    ) -> None:
        self.calls = calls
        self.ctx = ctx
        self.sink = sink
        self.cancel = cancel
        self.bound = bound
        self.started = [False] * len(calls)  # effect_start recorded (by position)
        self.next = 0  # position of the first call not yet admitted
        self.pending = 0  # admitted, not yet ended (running or waiting)
        self.barrier = False  # an Exclusive call is running
        self.safe_workers = 0  # worker tasks running Safe calls (at most `bound`)
        self.safe_waiting: deque[int] = deque()
        # Per call: unended calls it waits for; per call: the calls waiting for it.
        self.blockers = [0] * len(calls)
        self.waiters: dict[int, list[int]] = {}
        self.running: dict[asyncio.Task[None], int] = {}
        self.stopping = False  # cancelled, failed, or stopped from outside: start nothing
        self.failure: BaseException | None = None
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self.loop.create_future()

    async def run(self) -> None:
        if self.cancel.is_set():
            self._skip_unstarted()
            return
        watcher = asyncio.ensure_future(self.cancel.wait())
        watcher.add_done_callback(self._on_cancel)
        try:
            self._pump()
            try:
                # shield: our own cancellation must not cancel the shared future.
                await asyncio.shield(self.done)
            except asyncio.CancelledError:
                # Stopped from outside (the loop records an interrupt): running
                # calls end cancelled; unstarted ones are left for repair, since a
                # `skipped` result without a recorded cancel would break SCHED-5.
                self.stopping = True
                await self._cancel_running()
                raise
        finally:
            watcher.remove_done_callback(self._on_cancel)
            watcher.cancel()
        if self.failure is not None:
            raise self.failure  # the sink failed (trace or journal), not a tool
        if self.cancel.is_set():
            self._skip_unstarted()

    # --- starting calls -----------------------------------------------------------

    def _pump(self) -> None:
        """Start every call the rules allow now; resolve `done` when all ended."""
        if not self.stopping:
            calls = self.calls
            while self.next < len(calls) and not self.barrier:
                i = self.next
                if calls[i].classification.cls is CallClass.EXCLUSIVE:
                    if self.pending:
                        break  # SCHED-3: every earlier call ends first
                    self.next = i + 1
                    self.pending += 1
                    self.barrier = True  # SCHED-3: nothing later starts until it ends
                    self._start(i)
                else:
                    self._admit_segment(i)
            self._start_safe_workers()
        if self.running:
            return
        ended = self.stopping or (self.next == len(self.calls) and not self.pending)
        if ended and not self.done.done():
            self.done.set_result(None)

    def _start_safe_workers(self) -> None:
        while self.safe_waiting and self.safe_workers < self.bound:
            self.safe_workers += 1
            worker = self.loop.create_task(self._safe_worker())
            self.running[worker] = _WORKER
            worker.add_done_callback(self._on_done)

    def _admit_segment(self, first: int) -> None:
        """Admit every call from `first` up to the next Exclusive one. Calls
        whose work runs in another process, and Background calls, start first
        (the Safe workers' tasks are created before any in-process call's):
        they then overlap the in-process calls, Safe or Queue, which take
        turns on this thread (an fsynced write would hold the spawns back)."""
        calls = self.calls
        end = first
        while end < len(calls) and calls[end].classification.cls is not CallClass.EXCLUSIVE:
            end += 1
        self.next = end
        self.pending += end - first
        self._depend(first, end)
        blockers = self.blockers
        later: list[int] = []
        for i in range(first, end):
            if blockers[i]:
                continue  # ready once what it waits for has ended
            cls = calls[i].classification.cls
            if cls is not CallClass.BACKGROUND and not calls[i].tool.out_of_process:
                later.append(i)
            else:
                self._ready(i, cls)
        self._start_safe_workers()
        for i in later:
            self._ready(i, calls[i].classification.cls)

    def _depend(self, first: int, end: int) -> None:
        """Who waits for whom in the segment: each Queue call for the previous
        one of its key (SCHED-2), and of a Safe and a Queue call whose
        footprints conflict, the later for the earlier (SCHED-6)."""
        calls = self.calls
        last_on_key: dict[str | None, int] = {}
        readers: list[tuple[int, tuple[Path, ...]]] = []
        writers: list[tuple[int, tuple[Path, ...]]] = []
        for i in range(first, end):
            classification = calls[i].classification
            cls = classification.cls
            if cls is CallClass.QUEUE:
                key = classification.key
                previous = last_on_key.get(key)
                if previous is not None:
                    self._wait(i, previous)
                last_on_key[key] = i
                writes = classification.footprint()[1]
                if writes:
                    writers.append((i, writes))
            elif cls is CallClass.SAFE:
                reads = classification.footprint()[0]
                if reads:
                    readers.append((i, reads))
        if not readers or not writers:
            return
        for r, reads in readers:
            for w, writes in writers:
                if overlap(reads, writes):
                    self._wait(max(r, w), min(r, w))

    def _wait(self, later: int, earlier: int) -> None:
        self.blockers[later] += 1
        self.waiters.setdefault(earlier, []).append(later)

    def _ready(self, i: int, cls: CallClass) -> None:
        """Start a non-exclusive call that waits for nothing (a Safe one when a
        worker takes it: `_pump` starts workers)."""
        if cls is CallClass.SAFE:
            self.safe_waiting.append(i)
        else:
            self._start(i)  # Queue; Background: its task ends at the handshake

    def _ended(self, i: int) -> None:
        """Call `i` ended: the calls that waited only for it are ready."""
        waiting = self.waiters.pop(i, None)
        if waiting is None or self.stopping:
            return
        blockers, calls = self.blockers, self.calls
        for j in waiting:
            blockers[j] -= 1
            if not blockers[j]:
                self._ready(j, calls[j].classification.cls)

    def _start(self, i: int) -> None:
        task = self.loop.create_task(self._execute(i))
        self.running[task] = i
        task.add_done_callback(self._on_done)

    async def _safe_worker(self) -> None:
        """Run waiting Safe calls in order until none is left (or we stop).
        Calls share this task, so a tool's context variables outlive its call."""
        waiting = self.safe_waiting
        while waiting and not (self.cancel.is_set() or self.stopping):
            i = waiting.popleft()
            self.started[i] = True
            await execute_call(self.calls[i], self.ctx, self.sink)
            self.pending -= 1
            self._ended(i)
            if not waiting:
                self._pump()  # what waited for this segment to end may start now

    async def _execute(self, i: int) -> None:
        # A cancel may land between scheduling this task and its first step:
        # then the call has not started and gets `skipped` at the end.
        if self.cancel.is_set() or self.stopping:
            return
        self.started[i] = True
        await execute_call(self.calls[i], self.ctx, self.sink)

    # --- ending calls -------------------------------------------------------------

    def _on_done(self, task: asyncio.Task[None]) -> None:
        """A call's task or a Safe worker (`_WORKER`) ended."""
        try:
            i = self.running.pop(task)
            if not task.cancelled():
                exc = task.exception()
                if exc is not None and self.failure is None:
                    self.failure = exc
                    self._stop()
            if i == _WORKER:
                self.safe_workers -= 1  # its calls released themselves
            else:
                self._release(i)
            self._pump()
        except BaseException as exc:  # a bug here must end the batch, not hang it
            if self.failure is None:
                self.failure = exc
            self._stop()
            if not self.running and not self.done.done():
                self.done.set_result(None)

    def _release(self, i: int) -> None:
        self.pending -= 1
        if self.calls[i].classification.cls is CallClass.EXCLUSIVE:
            self.barrier = False
        else:
            self._ended(i)

    def _on_cancel(self, watcher: asyncio.Future[Any]) -> None:
        if not watcher.cancelled():
            self._stop()
            self._pump()

    def _stop(self) -> None:
        """Start nothing more and cancel what runs (each records its own end)."""
        self.stopping = True
        for task in self.running:
            task.cancel()

    async def _cancel_running(self) -> None:
        tasks = tuple(self.running)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _skip_unstarted(self) -> None:
        for i, call in enumerate(self.calls):
            if not self.started[i]:
                skip_call(call, self.sink)
