"""The fault matrix's SIGKILL rows: a real process runs the loop, is killed
mid-batch, and a new loop resumes the run from its journal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import ToolUseBlock

from .._sync import run_sync
from ._harness import DONE
from ._harness import ROOT
from ._harness import WAIT
from ._harness import FaultRow
from ._harness import Harness
from ._harness import Turn
from ._harness import bash
from ._harness import log_line
from ._harness import row_of
from ._harness import scripted
from ._rows import resumed_mid_batch

KILL_SLOW = (
    "echo b >> log.txt; sleep 60 & echo $! > m.tmp; mv m.tmp started.marker; wait; "
    "echo B >> log.txt"
)


def _kill_batch(ids: tuple[str, str, str]) -> tuple[ToolUseBlock, ...]:
    return (bash(ids[0], log_line("a")), bash(ids[1], KILL_SLOW), bash(ids[2], log_line("c")))


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
    h = Harness(Path(directory).parent, Path(directory).name, fsync=True, dispatcher=dispatcher)
    run_sync(h.run(KILLED_SCRIPTS[script]()))


def _sigkill_then_resume(workdir: Path, name: str, script: str, dispatcher: str) -> Harness:
    h = Harness(workdir, name, fsync=True, dispatcher=dispatcher)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "import sys; from metis_studies.faults import killed_child; killed_child(*sys.argv[1:])"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(h.dir), script, dispatcher],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    marker = h.ws / "started.marker"
    sleeper: int | None = None
    try:
        deadline = time.monotonic() + WAIT * 3
        while not marker.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"the child exited early: {proc.stderr.read()!r}")  # type: ignore[union-attr]
            if time.monotonic() > deadline:
                raise TimeoutError("the slow call never started")
            time.sleep(0.02)
        sleeper = int(marker.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=WAIT)
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
    run_sync(h.resume(scripted(DONE)))
    return h


def sigkill_then_resume(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill", "distinct-ids", dispatcher)
    return resumed_mid_batch("SIGKILL mid-batch, resumed from the journal", h)


def sigkill_duplicate_ids(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill-duplicate-ids", "one-id", dispatcher)
    return resumed_mid_batch("SIGKILL mid-batch with one id thrice, resumed", h)


def sigkill_background(workdir: Path, dispatcher: str) -> FaultRow:
    h = _sigkill_then_resume(workdir, "sigkill-background", "background", dispatcher)
    return row_of(
        "SIGKILL while a background job runs, resumed",
        h,
        "1.0 ok (job cancelled); run completed",
        {"s": 1, "e": 0},
    )
