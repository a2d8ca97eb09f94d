"""JobManager: handshake first, exactly one completion per job, cancellation
kills process groups."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from metis_runtime._errors import ToolError
from metis_runtime.tools import BashTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolOutput
from metis_trace import EffectOutcome
from tests._procs import alive

Done = tuple[str, str, EffectOutcome, ToolOutput]


def _collecting(jobs: JobManager) -> list[Done]:
    seen: list[Done] = []
    jobs.on_done(lambda occ, job, outcome, out: seen.append((occ, job, outcome, out)))
    return seen


def test_start_returns_before_the_job_runs_and_reports_once() -> None:
    async def main() -> None:
        jobs = JobManager()
        seen = _collecting(jobs)
        steps: list[str] = []

        async def work() -> ToolOutput:
            steps.append("ran")
            return ToolOutput("fine")

        job = jobs.start("1.0", work)
        assert steps == [] and jobs.running == (job,)
        assert jobs.outcome(job) is None
        assert await jobs.wait_all(timeout=5)
        assert steps == ["ran"] and not jobs.running
        assert seen == [("1.0", job, EffectOutcome.OK, ToolOutput("fine"))]
        assert jobs.outcome(job) == (EffectOutcome.OK, ToolOutput("fine"))
        with pytest.raises(KeyError):
            jobs.outcome("job-999")

    asyncio.run(main())


def test_job_ids_are_unique_and_occ_is_kept() -> None:
    async def main() -> None:
        jobs = JobManager(prefix="bg")
        seen = _collecting(jobs)

        async def work() -> ToolOutput:
            return ToolOutput("")

        ids = [jobs.start(f"1.{i}", work) for i in range(5)]
        assert ids == ["bg-1", "bg-2", "bg-3", "bg-4", "bg-5"]
        await jobs.wait_all()
        assert sorted((occ, job) for occ, job, _, _ in seen) == [
            (f"1.{i}", f"bg-{i + 1}") for i in range(5)
        ]

    asyncio.run(main())


def test_failures_after_handshake_are_error_outcomes() -> None:
    async def main() -> None:
        jobs = JobManager()
        seen = _collecting(jobs)

        async def tool_error() -> ToolOutput:
            await asyncio.sleep(0)
            raise ToolError("x: disk on fire")

        async def crash() -> ToolOutput:
            raise RuntimeError("boom")

        async def error_output() -> ToolOutput:
            return ToolOutput("bad", is_error=True)

        a = jobs.start("1.0", tool_error)
        b = jobs.start("1.1", crash)
        c = jobs.start("1.2", error_output)
        assert await jobs.wait_all(5)
        assert {job: (outcome, out) for _, job, outcome, out in seen} == {
            a: (EffectOutcome.ERROR, ToolOutput("x: disk on fire", True)),
            b: (EffectOutcome.ERROR, ToolOutput("RuntimeError: boom", True)),
            c: (EffectOutcome.ERROR, ToolOutput("bad", True)),
        }

    asyncio.run(main())


def test_background_bash_failing_after_handshake_reports_error(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, env={"PATH": os.environ["PATH"]}, jobs=JobManager())
    seen = _collecting(ctx.jobs)
    bash = BashTool()
    input = {"command": "sleep 0.2; echo failing; exit 4", "background": True}

    async def main() -> str:
        started = time.monotonic()
        job = ctx.jobs.start("2.0", lambda: bash.run(input, ctx))
        assert time.monotonic() - started < 0.1 and seen == []
        assert await ctx.jobs.wait_all(10)
        return job

    job = asyncio.run(main())
    assert seen == [
        ("2.0", job, EffectOutcome.ERROR, ToolOutput("failing\n[exit code: 4]", is_error=True))
    ]


def test_wait_all_timeout_leaves_jobs_running() -> None:
    async def main() -> None:
        jobs = JobManager()
        seen = _collecting(jobs)
        release = asyncio.Event()

        async def slow() -> ToolOutput:
            await release.wait()
            return ToolOutput("late")

        async def chained() -> ToolOutput:
            # a job started while wait_all is waiting is waited for too
            jobs.start("1.9", slow)
            return ToolOutput("first")

        job = jobs.start("1.0", slow)
        assert await jobs.wait_all(timeout=0.05) is False
        assert jobs.running == (job,) and seen == []
        jobs.start("1.1", chained)
        asyncio.get_running_loop().call_later(0.05, release.set)
        assert await jobs.wait_all(timeout=5) is True
        assert sorted(occ for occ, *_ in seen) == ["1.0", "1.1", "1.9"]

    asyncio.run(main())


def test_cancel_all_reports_cancelled_even_before_first_step() -> None:
    async def main() -> None:
        jobs = JobManager()
        seen = _collecting(jobs)

        async def forever() -> ToolOutput:
            await asyncio.Event().wait()
            return ToolOutput("never")

        running = jobs.start("1.0", forever)
        await asyncio.sleep(0.01)  # this one is inside its coroutine
        fresh = jobs.start("1.1", forever)  # this one has not taken a step
        await jobs.cancel_all()
        assert jobs.running == ()
        assert sorted((job, outcome) for _, job, outcome, _ in seen) == [
            (running, EffectOutcome.CANCELLED),
            (fresh, EffectOutcome.CANCELLED),
        ]
        assert all(out == ToolOutput("cancelled", True) for *_, out in seen)

    asyncio.run(main())


def test_a_failing_callback_does_not_starve_the_others() -> None:
    async def main() -> None:
        jobs = JobManager()
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))

        def bad(*args: Any) -> None:
            raise ValueError("listener bug")

        jobs.on_done(bad)
        seen = _collecting(jobs)

        async def work() -> ToolOutput:
            return ToolOutput("ok")

        jobs.start("1.0", work)
        await jobs.wait_all(5)
        assert [o for _, _, o, _ in seen] == [EffectOutcome.OK]
        assert len(reported) == 1 and isinstance(reported[0]["exception"], ValueError)

    asyncio.run(main())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_cancel_all_kills_background_process_groups(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    ctx = ToolContext(workspace=ws, env={"PATH": os.environ["PATH"]}, jobs=JobManager())
    seen = _collecting(ctx.jobs)
    bash = BashTool()
    command = "echo $$ > leader.pid; sh -c 'echo $$ > gc.pid; exec sleep 30' & wait"

    async def main() -> None:
        ctx.jobs.start("3.0", lambda: bash.run({"command": command, "background": True}, ctx))
        while not (ws / "gc.pid").exists() or not (ws / "gc.pid").read_text().strip():
            await asyncio.sleep(0.02)
        await ctx.jobs.cancel_all()

    asyncio.run(main())
    assert [outcome for _, _, outcome, _ in seen] == [EffectOutcome.CANCELLED]
    gc = int((ws / "gc.pid").read_text())
    deadline = time.monotonic() + 10  # a liveness wait; slow under a loaded CI
    while alive(gc) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(gc)
