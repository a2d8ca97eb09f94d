"""Run a workload for real: in this process, as `metis run`, or as a harness process.

- `in-process`: the harness's loop in this process; a `cancel` fault presses
  stop when its call's effect starts, an `interrupt` fault cancels the run's
  task there (Ctrl-C), and the run is resumed in process.
- `metis-run`: `python -m metis_cli run --scenario ...` with the workload's
  options; the scripted asker's replies go to its stdin (its interactive
  route reads them), and a `kill` fault arms `METIS_FAILPOINT`, so the
  process SIGKILLs itself there; then `metis run --resume` continues it.
- `process`: the same harness as a process (`metis_studies.explore._child`),
  for what `metis run` cannot express; killed and resumed the same way.

Every process runs in its own session, so a timeout ends its whole group
(tools, child agents). What ran is kept in `Outcome.steps`; a crash, a hang
or a resume that did not end the run is `Outcome.problem`, which is not an
invariant: the checks (`_checks.py`) read the files the run left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from typing import Literal

import attrs

from metis_runtime import LoopObserver
from metis_runtime import RunResult
from metis_trace import Route
from metis_trace import read_trace

from ._harness import RunPaths
from ._harness import answered_asks
from ._harness import build
from ._harness import child_env
from ._harness import describe
from ._harness import metis_run_argv
from ._harness import prepare
from ._harness import runs_as_metis_run
from ._mech_run import mech_env
from ._mech_run import needs_metis_run
from ._workload import Workload

Execution = Literal["in-process", "metis-run", "process"]
EXECUTIONS: tuple[Execution, ...] = ("in-process", "metis-run", "process")
FAILPOINT_ENV = "METIS_FAILPOINT"  # metis_runtime._failpoints reads it
DEFAULT_TIMEOUT = 60.0


@attrs.frozen
class Outcome:
    workload: Workload
    paths: RunPaths
    execution: Execution
    steps: tuple[str, ...]
    problem: str | None
    seconds: float


def execution_of(workload: Workload, wanted: Execution) -> Execution:
    """What can run the workload, closest to `wanted`: a kill needs a
    process, a cancel or interrupt this process, and `metis run` only
    what it can express."""
    fault = workload.fault.kind if workload.fault is not None else None
    if workload.probe is not None:  # a runner of its own (`_mech.run_probe`)
        from ._mech import probe_execution

        return "in-process" if probe_execution(workload) == "in-process" else "process"
    if needs_metis_run(workload):
        return "metis-run"
    if fault in ("cancel", "interrupt", "fail"):
        return "in-process"
    if wanted == "metis-run" and not runs_as_metis_run(workload):
        wanted = "process"
    if fault == "kill" and wanted == "in-process":
        return "metis-run" if runs_as_metis_run(workload) else "process"
    return wanted


class _FaultAt(LoopObserver):
    """Presses stop (or Ctrl-C) once, right after `occ`'s effect started."""

    def __init__(self, occ: str, action: Any) -> None:
        self.occ = occ
        self.action = action
        self.done = False

    def call_started(self, occ: str, tool: str, input: Any) -> None:
        if occ == self.occ and not self.done:
            self.done = True
            asyncio.get_running_loop().call_soon(self.action)


FAILED = "explore: the embedder's observer failed"


class _FailAt(LoopObserver):
    """Raises once, as `occ`'s result is recorded: an embedder's bug, which
    ends the run (a runtime failure) while the batch's other calls are open."""

    def __init__(self, occ: str) -> None:
        self.occ = occ
        self.done = False

    def call_finished(self, occ: str, *args: Any) -> None:
        if occ == self.occ and not self.done:
            self.done = True
            raise RuntimeError(FAILED)


async def _in_process(workload: Workload, paths: RunPaths, timeout: float) -> list[str]:
    steps = ["in process: run"]
    fault = workload.fault
    holder: dict[str, Any] = {}

    def stop() -> None:
        holder["run"].loop.cancel("explore: the user pressed stop")

    def interrupt() -> None:
        # Ctrl-C: the signal is recorded (the interrupt's source, SCHED-5),
        # then the run's task is cancelled.
        holder["run"].loop.signal_received(signal.SIGINT)
        holder["task"].cancel()

    observer: LoopObserver | None = None
    if fault is not None and fault.kind in ("cancel", "interrupt"):
        observer = _FaultAt(fault.point, stop if fault.kind == "cancel" else interrupt)
        steps[0] += f" ({fault.kind} when {fault.point} starts)"
    elif fault is not None and fault.kind == "fail":
        observer = _FailAt(fault.point)
        steps[0] += f" (the observer fails when {fault.point} has its result)"
    run = build(workload, paths, observer=observer)
    holder["run"] = run
    task = asyncio.ensure_future(run.go(workload.prompt))
    holder["task"] = task
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
        if not done:
            holder["run"].loop.stop_requested("explore: the run hung")  # the stop's source
            task.cancel()
            await asyncio.wait((task,))
            raise TimeoutError(f"the run did not finish within {timeout:g}s")
        interrupted = task.cancelled()
        if not interrupted:
            ended: RunResult = task.result()
            if fault is not None and fault.kind == "fail":
                steps[0] += f" -> {ended.status.value}"  # its open calls wait for repair
    finally:
        run.close()
    if interrupted:
        steps.append("in process: resume")
        again = build(workload, paths, resume=True)
        try:
            result: RunResult = await asyncio.wait_for(again.go(workload.prompt), timeout)
        finally:
            again.close()
        steps[-1] += f" -> {result.status.value}"
    return steps


def run_process(
    argv: list[str], env: dict[str, str], stdin: str, timeout: float, log: Path
) -> tuple[int, str]:
    """Run to its exit; stderr goes to `log` (a pipe would also wait for the
    processes a killed run leaves, such as search workers, to close it)."""
    with log.open("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            start_new_session=True,
        )
        try:
            proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{argv[2]} did not finish within {timeout:g}s") from None
        finally:
            # What the run left in its process group (search workers of a killed
            # run) goes with it; a tool's own group ends with its command.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        err.seek(0)
        return proc.returncode, err.read()


def _answers_text(workload: Workload, skip: int) -> str:
    if workload.route is not Route.INTERACTIVE:
        return ""
    return "".join("y\n" if a else "n\n" for a in workload.answers[skip:])


def _crash(rc: int, err: str) -> str | None:
    if rc in (0, 1) and "Traceback (most recent call last)" not in err:
        return None
    tail = " ".join(err.strip().splitlines()[-1:])[:300]
    return f"exit {rc}: {tail or 'no output'}"


def witness_argv(paths: RunPaths) -> list[str]:
    """The witness (`python -I -m metis_witness`, its own process, run from
    the installed metis whatever PYTHONPATH says) over the run's workspace and
    its children's worktrees; the run's own files are its bookkeeping. The
    roots and exclusions are `metis_witness.run_plan`'s for this layout."""
    argv = [sys.executable, "-I", "-m", "metis_witness", "--out", str(paths.witness)]
    for root in (paths.workspace, paths.run_dir / "worktrees"):
        argv += ["--root", str(root)]
    for excluded in (paths.run_dir, paths.trace, paths.journal, paths.witness):
        argv += ["--exclude", str(excluded)]
    return [*argv, "--trace", str(paths.trace)]


class _Beside:
    """The witness beside this process, for an in-process run."""

    def __init__(self, paths: RunPaths) -> None:
        self.proc = subprocess.Popen(
            [*witness_argv(paths), "--beside", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            self.stop()
            raise RuntimeError("the witness did not start")

    def stop(self) -> None:
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def _as_processes(
    workload: Workload, paths: RunPaths, execution: Execution, timeout: float, witness: bool
) -> tuple[list[str], str | None]:
    env = mech_env(workload, paths, child_env(paths))
    python = sys.executable
    if execution == "metis-run":
        first = metis_run_argv(workload, paths, python)
        again = [python, "-m", "metis_cli", "run", "--resume", "--trace", str(paths.trace)]
        again.append("--quiet")
        if witness:  # `metis run` becomes the witness, which runs it (one session each)
            first.append("--witness")
            again.append("--witness")
    else:
        module = "metis_studies.explore._child"
        first = [python, "-m", module, "run", str(paths.root)]
        again = [python, "-m", module, "resume", str(paths.root)]
        if witness:
            first = [*witness_argv(paths), "--", *first]
            again = [*witness_argv(paths), "--", *again]
    armed = dict(env)
    fault = workload.fault
    if fault is not None and fault.kind == "kill":
        armed[FAILPOINT_ENV] = fault.point
    steps = [
        describe(first, {FAILPOINT_ENV: armed[FAILPOINT_ENV]} if FAILPOINT_ENV in armed else None)
    ]
    rc, err = run_process(first, armed, _answers_text(workload, 0), timeout, paths.root / "run.log")
    # Under the witness, a run killed by SIGKILL exits 128 + 9.
    if rc not in (-signal.SIGKILL, 128 + signal.SIGKILL):
        steps[-1] += f" -> exit {rc}"
        return steps, _crash(rc, err)
    steps[-1] += " -> killed"
    log = paths.root / "resume.log"
    points = [fault.again] if fault is not None and fault.again else []
    while True:
        with paths.trace.open(encoding="utf-8") as fh:
            _, events = read_trace(fh)
        armed = dict(env)
        if points:  # the recovery killed too (`Fault.again`), then resumed once more
            armed[FAILPOINT_ENV] = points.pop(0)
        shown = {FAILPOINT_ENV: armed[FAILPOINT_ENV]} if armed != env else None
        steps.append(describe(again, shown))
        rest = _answers_text(workload, answered_asks(events))
        rc, err = run_process(again, armed, rest, timeout, log)
        if rc in (-signal.SIGKILL, 128 + signal.SIGKILL) and armed != env:
            steps[-1] += " -> killed"
            log = paths.root / "resume-2.log"
            continue
        steps[-1] += f" -> exit {rc}"
        return steps, _crash(rc, err)


def execute(
    workload: Workload,
    root: Path,
    execution: Execution = "in-process",
    *,
    timeout: float = DEFAULT_TIMEOUT,
    witness: bool = True,
) -> Outcome:
    """Prepare `root` (scenario, workspace) and run the workload there, under
    the witness (`witness`), which records its effects from outside."""
    how = execution_of(workload, execution)
    paths = RunPaths(root.absolute())  # children and servers run in other folders
    prepare(workload, paths)
    start = time.monotonic()
    problem: str | None = None
    try:
        if workload.probe is not None:
            from ._mech import run_probe

            steps, problem = run_probe(workload, paths, timeout)
        elif how == "in-process":
            beside = _Beside(paths) if witness else None
            try:
                steps = asyncio.run(_in_process(workload, paths, timeout))
            finally:
                if beside is not None:
                    beside.stop()
        else:
            steps, problem = _as_processes(workload, paths, how, timeout, witness)
    except TimeoutError as exc:
        steps, problem = [how], f"hang: {exc}"
    except Exception as exc:  # the runtime raised out of the loop: a crash, reported
        steps, problem = [how], f"crash: {type(exc).__name__}: {exc}"
    return Outcome(workload, paths, how, tuple(steps), problem, time.monotonic() - start)
