"""The keeper (`metis_runtime/tools/_keeper.py`): a detachable Background bash
job reports exactly what an ordinary one does, and `JobManager.detach_all`
leaves it running, recorded DETACHED with its process group."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.agents import _process
from metis_runtime.tools import BashTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_trace import EffectOutcome
from tests._procs import alive

COMMANDS = [
    "echo hi; exit 4",
    "echo out; echo err >&2; true",
    "kill -TERM $$",
    "yes | head -c 6",  # SIGPIPE is the job's again (Python's interpreter ignores it)
    "trap 'echo usr1' USR1; kill -USR1 $$; echo after",  # the job's signals are its own
]


async def _finished(ws: Path, command: str, detach: bool) -> tuple[EffectOutcome, str]:
    jobs = JobManager()
    got: list[tuple[EffectOutcome, str]] = []
    jobs.on_done(lambda occ, job, outcome, output: got.append((outcome, output.content)))
    ctx = ToolContext(ws, {"PATH": os.environ["PATH"]}, jobs, detach_jobs=detach)
    run = functools.partial(BashTool().run, {"command": command, "background": True}, ctx)
    jobs.start("1.0", run)
    assert await jobs.wait_all(30)
    return got[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_kept_job_reports_what_an_ordinary_one_does(tmp_path: Path, command: str) -> None:
    plain = asyncio.run(_finished(tmp_path, command, detach=False))
    kept = asyncio.run(_finished(tmp_path, command, detach=True))
    assert kept == plain


async def _detach(ws: Path, detach: bool) -> dict[str, Any]:
    jobs = JobManager()
    seen: dict[str, Any] = {}
    jobs.on_done(lambda occ, job, outcome, output: seen.update(outcome=outcome, job=job))
    ctx = ToolContext(ws, {"PATH": os.environ["PATH"]}, jobs, detach_jobs=detach)
    command = "echo $$ > job.pid; exec sleep 60"
    jobs.start(
        "1.0", functools.partial(BashTool().run, {"command": command, "background": True}, ctx)
    )
    while not (ws / "job.pid").exists() or not (ws / "job.pid").read_text().strip():
        await asyncio.sleep(0.02)
    await jobs.detach_all()
    seen["pid"] = jobs.detached_pid("job-1")
    seen["bash"] = int((ws / "job.pid").read_text())
    seen["alive_after_detach"] = alive(seen["bash"])
    await jobs.cancel_all()  # what the loop does next: only undetached jobs are left
    await asyncio.sleep(0.2)
    seen["alive_after_cancel"] = alive(seen["bash"])
    return seen


def test_detach_all_leaves_a_kept_job_running(tmp_path: Path) -> None:
    seen = asyncio.run(_detach(tmp_path, detach=True))
    try:
        assert seen["outcome"] is EffectOutcome.DETACHED
        assert seen["pid"] is not None and seen["alive_after_detach"] and seen["alive_after_cancel"]
        assert os.getpgid(seen["bash"]) == seen["pid"]  # the recorded group is the job's
    finally:
        with contextlib.suppress(OSError):
            os.killpg(seen["pid"], signal.SIGKILL)
        _process._spared.discard(seen["pid"])  # leave no state in the process


def test_without_the_option_detach_all_leaves_the_job_to_be_cancelled(tmp_path: Path) -> None:
    seen = asyncio.run(_detach(tmp_path, detach=False))
    assert seen["outcome"] is EffectOutcome.CANCELLED and seen["pid"] is None
    assert seen["alive_after_detach"] and not seen["alive_after_cancel"]
