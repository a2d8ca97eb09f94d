"""Background jobs: a handshake now, the outcome later."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Awaitable
from collections.abc import Callable

from metis_trace import EffectOutcome

from .._errors import ToolError
from ._base import ToolOutput

JobCallback = Callable[[str, str, EffectOutcome, ToolOutput], None]
"""Called once per job with (occ, job_id, outcome, output)."""

Detacher = Callable[[], Awaitable[int | None]]
"""Detaches a running job's processes; their process group id, or None if
the job could not be detached (it ended, or did not answer)."""


class _Slot:
    """What a job's coroutine tells its manager: how to detach it, and
    whether it was."""

    __slots__ = ("detached_pid", "detacher")

    def __init__(self) -> None:
        self.detacher: Detacher | None = None
        self.detached_pid: int | None = None


_SLOT: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("metis_job", default=None)


def offer_detach(detacher: Detacher) -> bool:
    """Called by a job's own coroutine (the bash tool): this job can be
    detached, by `detacher`. False outside a job."""
    slot = _SLOT.get()
    if slot is None:
        return False
    slot.detacher = detacher
    return True


class JobManager:
    """Runs Background calls as detached tasks.

    `start` returns the job id at once, before the job's coroutine has run a
    step, so the handshake is always recorded before the completion. Each job
    ends in exactly one `on_done` notification: OK, ERROR (the coroutine
    raised, or returned an `is_error` output), CANCELLED, or DETACHED (left
    running on purpose at the run's end: `detach_all`). Cancelling a job
    cancels its coroutine; the bash tool kills its process group on
    cancellation, so `cancel_all` leaves no process of a job behind.
    """

    def __init__(self, prefix: str = "job") -> None:
        self._prefix = prefix
        self._ids = itertools.count(1)
        self._tasks: dict[str, asyncio.Task[tuple[EffectOutcome, ToolOutput]]] = {}
        self._callbacks: list[JobCallback] = []
        self._done: dict[str, tuple[str, EffectOutcome, ToolOutput]] = {}
        self._slots: dict[str, _Slot] = {}

    def on_done(self, callback: JobCallback) -> None:
        """Register `callback` for every job that ends from now on."""
        self._callbacks.append(callback)

    def start(self, occ: str, coro_factory: Callable[[], Awaitable[ToolOutput]]) -> str:
        """Detach `coro_factory()` as a job of call occurrence `occ`; return its id.

        Must be called from a running event loop.
        """
        job_id = f"{self._prefix}-{next(self._ids)}"
        slot = self._slots[job_id] = _Slot()
        task = asyncio.get_running_loop().create_task(
            _drive(coro_factory, slot), name=f"metis {job_id} ({occ})"
        )
        self._tasks[job_id] = task
        # A done callback, not code in the coroutine: a job cancelled before its
        # first step never enters the coroutine but must still report.
        task.add_done_callback(lambda t: self._finish(occ, job_id, t))
        return job_id

    def _finish(
        self, occ: str, job_id: str, task: asyncio.Task[tuple[EffectOutcome, ToolOutput]]
    ) -> None:
        self._tasks.pop(job_id, None)
        slot = self._slots.get(job_id)
        if slot is not None and slot.detached_pid is not None:
            pgid = slot.detached_pid
            outcome = EffectOutcome.DETACHED
            output = ToolOutput(f"detached: still running as process group {pgid}", False)
        elif task.cancelled():
            outcome, output = EffectOutcome.CANCELLED, ToolOutput("cancelled", True)
        else:
            outcome, output = task.result()
        self._done[job_id] = (occ, outcome, output)
        for callback in tuple(self._callbacks):
            try:
                callback(occ, job_id, outcome, output)
            except Exception as exc:  # one bad listener must not starve the others
                task.get_loop().call_exception_handler(
                    {"message": f"on_done callback failed for {job_id}", "exception": exc}
                )

    @property
    def running(self) -> tuple[str, ...]:
        """Ids of jobs that have not ended, in start order."""
        return tuple(self._tasks)

    def outcome(self, job_id: str) -> tuple[EffectOutcome, ToolOutput] | None:
        """The outcome and output of an ended job; None while it runs.

        KeyError for an id this manager never issued.
        """
        done = self._done.get(job_id)
        if done is not None:
            return done[1], done[2]
        if job_id in self._tasks:
            return None
        raise KeyError(job_id)

    async def wait_all(self, timeout: float | None = None) -> bool:
        """Wait until every job (including ones started meanwhile) has ended.

        True if none is left running; False if `timeout` passed first (the
        jobs keep running).
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._tasks:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(tuple(self._tasks.values()), timeout=remaining)
        return True

    def detached_pid(self, job_id: str) -> int | None:
        """The process group a detached job left running; None otherwise."""
        slot = self._slots.get(job_id)
        return None if slot is None else slot.detached_pid

    async def detach_all(self) -> None:
        """Detach every running job that can be (`offer_detach`) and wait until
        each has reported DETACHED; the others keep running (`cancel_all`)."""
        for job_id, task in tuple(self._tasks.items()):
            slot = self._slots[job_id]
            if slot.detacher is None or task.done():
                continue
            pgid = await slot.detacher()
            if pgid is not None:
                slot.detached_pid = pgid
                # Its coroutine returns at once; if not, cancelling it must not
                # kill the detached processes (the tool checks the same mark).
                await asyncio.wait({task}, timeout=5.0)
                if not task.done():
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)

    async def cancel_all(self) -> None:
        """Cancel every running job and wait until each has reported CANCELLED
        (or finished on its own meanwhile)."""
        while self._tasks:
            tasks = tuple(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _drive(
    coro_factory: Callable[[], Awaitable[ToolOutput]], slot: _Slot
) -> tuple[EffectOutcome, ToolOutput]:
    _SLOT.set(slot)  # this task's own context: the job's coroutine finds its slot
    try:
        output = await coro_factory()
    except ToolError as exc:
        return EffectOutcome.ERROR, ToolOutput(str(exc), True)
    except Exception as exc:  # a job's failure is its outcome, never the loop's crash
        return EffectOutcome.ERROR, ToolOutput(f"{type(exc).__name__}: {exc}", True)
    return (EffectOutcome.ERROR if output.is_error else EffectOutcome.OK), output
