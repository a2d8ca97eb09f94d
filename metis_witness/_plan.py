"""What a run's witness watches, and starting the witness from Python."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

READY_TIMEOUT_S = 30.0


class WitnessError(Exception):
    """The witness could not be started or did not become ready."""


def witness_path(trace: str | os.PathLike[str]) -> Path:
    """Where a run's witness file goes by default: beside its trace."""
    t = Path(trace)
    return t.with_name(t.name + ".witness")


def tree_dir(trace: Path) -> Path:
    """The run's agent tree (as `metis run` lays it out): the trace's folder for
    a `trace.jsonl`, else `<trace>.agents/`."""
    return trace.parent if trace.name == "trace.jsonl" else trace.with_name(trace.name + ".agents")


def run_plan(
    workspace: str | os.PathLike[str], trace: str | os.PathLike[str]
) -> tuple[list[str], list[str]]:
    """(roots, excluded) for a run: the workspace and the tree's `worktrees/`
    (children's branch worktrees and temp copies) are watched; the trace, its
    journal, the tree's ledger, agent folders and offloads are the runtime's
    own bookkeeping and are not."""
    ws = os.path.realpath(workspace)
    t = Path(os.path.realpath(Path(trace).parent)) / Path(trace).name
    tree = tree_dir(t)
    roots = [ws, str(tree / "worktrees")]
    excluded = [str(tree), str(t), str(t) + ".journal", str(witness_path(t))]
    return roots, excluded


def witness_argv(
    out: str | os.PathLike[str],
    roots: Sequence[str | os.PathLike[str]],
    *,
    excluded: Sequence[str | os.PathLike[str]] = (),
    trace: str | os.PathLike[str] | None = None,
    exec_: bool = True,
    python: str = sys.executable,
) -> list[str]:
    """The argv prefix that runs a command under the witness (append `command`)."""
    # -I: the witness never loads a metis from PYTHONPATH (a patched runtime's copy)
    argv = [python, "-I", "-m", "metis_witness", "--out", os.fspath(out)]
    for r in roots:
        argv += ["--root", os.fspath(r)]
    for e in excluded:
        argv += ["--exclude", os.fspath(e)]
    if trace is not None:
        argv += ["--trace", os.fspath(trace)]
    if not exec_:
        argv.append("--no-exec")
    return [*argv, "--"]


class Witness:
    """The witness beside this process: `with Witness(out, roots): run()`.

    Entering returns once every watch is in place (the witness says so);
    leaving closes its stdin, and it writes its end and exits."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        roots: Sequence[str | os.PathLike[str]],
        *,
        excluded: Sequence[str | os.PathLike[str]] = (),
        trace: str | os.PathLike[str] | None = None,
    ) -> None:
        argv = witness_argv(out, roots, excluded=excluded, trace=trace)[:-1]
        self._argv = [*argv, "--beside", str(os.getpid())]
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Witness:
        self._proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if line.strip() != "ready":
            err = self._stop()
            raise WitnessError(f"the witness did not start: {err or 'no ready line'}")
        return self

    def _stop(self) -> str:
        proc, self._proc = self._proc, None
        if proc is None:
            return ""
        try:
            _, err = proc.communicate(timeout=READY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        return " ".join((err or "").split())[:300]

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()
