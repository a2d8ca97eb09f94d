"""`metis run --detach-jobs`: a background job still running at the end is
left running on purpose: the run exits at once, the trace records the job
`detached` with its process group, and the job survives the run's exit
handlers, its cgroup's kill and its shepherd. Without the option the job is
killed (tests/secrets/test_orphans.py: 0 processes after 5 s)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from metis_check import check_trace
from metis_runtime.agents._process import session_members
from metis_trace import EffectOutcome
from metis_trace import JobDone
from metis_trace import read_trace
from tests._procs import alive
from tests.runtime.test_loop_support import metis_run_argv
from tests.runtime.test_loop_support import write_scenario


def _cgroup_writable() -> bool:
    from metis_runtime.agents._process import _cgroup2_mount

    return _cgroup2_mount() is not None and os.geteuid() == 0


def _run(tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], float, Path]:
    marker = f"{random.randint(100000, 999999)}"
    job = (
        "f=/proc/self/cgroup; cat $f > job.cgroup; env > job.env; echo $$ > job.pid; "
        f"sleep 77{marker}; echo finished > job.done"
    )
    turns = [
        [{"tool": "bash", "id": "j", "input": {"command": job, "background": True}}],
        [
            {
                "tool": "bash",
                "id": "w",
                "input": {"command": "until test -s job.pid; do sleep 0.05; done"},
            }
        ],
        [{"text": "done"}],
    ]
    scenario = write_scenario(tmp / "s.yaml", turns)
    trace = tmp / "run" / "trace.jsonl"
    argv = metis_run_argv(
        "--workspace", str(tmp / "ws"), "--scenario", str(scenario), "--headless",
        "--mode", "bypassPermissions", "--trace", str(trace), "-q", *extra,
    )  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return done, time.monotonic() - start, trace


def test_a_job_detached_on_purpose_outlives_the_run_and_is_recorded(tmp_path: Path) -> None:
    done, seconds, trace = _run(tmp_path, "--detach-jobs")
    pid_file = tmp_path / "ws" / "job.pid"
    job_pid = int(pid_file.read_text()) if pid_file.exists() else 0
    pgid = 0
    try:
        assert done.returncode == 0, done.stderr
        assert seconds < 30  # it did not wait for the job (sleep 77...)
        with trace.open() as fh:
            header, events = read_trace(fh)
        report = check_trace(events, header)
        assert report.ok, report.first
        (job_done,) = [e for e in events if isinstance(e, JobDone)]
        assert job_done.outcome is EffectOutcome.DETACHED and job_done.pid is not None
        pgid = job_done.pid
        # The shepherd and the exit handlers have run (the run has exited);
        # give a loaded machine a moment, then the job must still be there.
        time.sleep(1.5)
        assert alive(job_pid), "the detached job was killed"
        assert job_pid in session_members(pgid)
        with open(f"/proc/{job_pid}/cgroup", encoding="utf-8") as fh:
            assert "metis-" not in fh.read()  # out of the run's cgroup
        assert not (tmp_path / "ws" / "job.done").exists()
        # It was under the run's guard until it was detached: the tree's mark
        # (the shepherd spared its session) and, here, the run's cgroup.
        assert "METIS_TREE=" in (tmp_path / "ws" / "job.env").read_text()
        assert "metis-" in (tmp_path / "ws" / "job.cgroup").read_text() or not _cgroup_writable()
    finally:
        for target in {pgid, job_pid} - {0}:
            with contextlib.suppress(OSError):
                os.killpg(target, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(job_pid, signal.SIGKILL) if job_pid else None
    deadline = time.monotonic() + 10
    while job_pid and alive(job_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(job_pid)
