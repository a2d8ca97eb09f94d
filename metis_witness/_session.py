"""One witness session: watch, say ready, let the run go, record until it ends.

Two shapes. *Around* a command (`run_around`): the witness sets its watches,
records `ready`, and only then starts the command (under strace when it can
trace here), records until the command exits, and returns its status.
*Beside* a process (`run_beside`, for runs inside a test or another tool's
process): the witness sets its watches, records `ready`, tells its parent on
stdout, and records until its stdin closes or that process dies; process
execution is then not observed (the witness does not trace its parent).

Times are `time.monotonic()` (CLOCK_MONOTONIC, system-wide on Linux): the
clock the trace header's `meta.clock` maps `t` to.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from inotify_simple import INotify
from inotify_simple import flags

from . import _exec
from ._file import VERSION
from ._file import WitnessFile
from ._tree import TreeWatcher

PRODUCER = "metis_witness"
DRAIN_S = 2.0  # after the command exits: how long to wait for inotify to report strace's log closed
ALWAYS_UNSEEN = (
    ("reads", "inotify reports no reads here (no IN_ACCESS / IN_OPEN watched)"),
    ("network", "nothing outside the file system is watched"),
    ("outside", "changes outside the watched trees"),
)
_PR_SET_PDEATHSIG = 1


@attrs.frozen
class Plan:
    """What to watch and where to write."""

    out: str
    roots: tuple[str, ...]
    excluded: tuple[str, ...] = ()
    trace: str | None = None
    exec_: bool = True


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None


def _limits() -> dict[str, int]:
    out = {}
    for name in ("max_queued_events", "max_user_watches", "max_user_instances"):
        with contextlib.suppress(OSError, ValueError):
            out[name] = int(Path(f"/proc/sys/fs/inotify/{name}").read_text().strip())
    return out


def _redactor() -> Callable[[str], str]:
    from metis_runtime import Redactor

    return Redactor().text


def _pdeathsig() -> None:
    # The command dies with the witness: a run is never left unwatched.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class _Session:
    def __init__(self, plan: Plan, *, trace_exec: bool) -> None:
        self.plan = plan
        self.clock = time.monotonic
        self.t0 = self.clock()
        self.file = WitnessFile(plan.out, _redactor)
        self.ino = INotify()
        self.tree = TreeWatcher(self.ino, plan.roots, plan.excluded, self.clock)
        self.strace: str | None = None
        unseen = [{"what": w, "why": why} for w, why in ALWAYS_UNSEEN]
        watched: list[dict[str, Any]] = [
            {
                "what": "files",
                "how": "inotify (inotify_simple), recursive",
                "roots": list(plan.roots),
                "excluded": [*plan.excluded, "every .git folder"],
            }
        ]
        if trace_exec:
            self.strace, why = _exec.probe()
            if self.strace is not None:
                watched.append({"what": "exec", "how": _exec.HOW})
                watched.append({"what": "exits", "how": _exec.HOW_EXITS})
                signals = list(_exec.SIGNALS)
                watched.append({"what": "signals", "how": _exec.HOW_SIGNALS, "signals": signals})
            else:
                for what in ("exec", "exits", "signals"):
                    unseen.append({"what": what, "why": why})
        else:
            beside = "beside its parent process: the witness does not trace it"
            for what in ("exec", "exits", "signals"):
                unseen.append({"what": what, "why": beside})
        self.tree.start()
        self.file.write(
            [
                {
                    "kind": "header",
                    "format": "metis-witness",
                    "version": VERSION,
                    "session": self.file.session,
                    "producer": PRODUCER,
                    "pid": os.getpid(),
                    "clock": "CLOCK_MONOTONIC",
                    "boot_id": _boot_id(),
                    "t": self.t0,
                    "trace": plan.trace,
                    "watched": watched,
                    "not_observed": unseen,
                    "limits": _limits(),
                }
            ]
        )
        self.file.write(self.tree.handle((), self.t0, self.clock()))  # watch-limit losses
        self.exec_log: str | None = None
        self.exec_wd: int | None = None
        self.exec_fh: Any = None
        self.parser: _exec.ExecParser | None = None
        self.exec_closed = False
        self._before = self.t0

    # --- exec log ---------------------------------------------------------------------

    def open_exec_log(self) -> list[str]:
        """A private file for strace to write, watched; the strace argv prefix."""
        assert self.strace is not None
        folder = tempfile.mkdtemp(prefix="metis-witness-")
        self.exec_log = os.path.join(folder, "exec.log")
        Path(self.exec_log).touch(mode=0o600)
        self.exec_fh = open(self.exec_log, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
        self.exec_wd = self.ino.add_watch(self.exec_log, flags.MODIFY | flags.CLOSE_WRITE)
        self.parser = _exec.ExecParser(_exec.realtime_offset(), self.clock)
        return [self.strace, *_exec.STRACE_ARGS, "-o", self.exec_log, "--"]

    def _read_exec(self) -> list[dict[str, Any]]:
        if self.exec_fh is None or self.parser is None:
            return []
        return list(self.parser.feed(self.exec_fh.read()))

    def close_exec_log(self) -> None:
        if self.exec_log is not None:
            self.exec_fh.close()
            with contextlib.suppress(OSError):
                os.unlink(self.exec_log)
                os.rmdir(os.path.dirname(self.exec_log))

    # --- the loop ---------------------------------------------------------------------

    def pump(self) -> None:
        """Read what inotify has queued; write its records."""
        before = self.clock()
        events = self.ino.read(timeout=0)
        after = self.clock()
        ours = [e for e in events if e.wd != self.exec_wd or self.exec_wd is None]
        records = self.tree.handle(ours, self._before, after) if ours else []
        if self.exec_wd is not None and len(ours) != len(events):
            records.extend(self._read_exec())
            if any(e.wd == self.exec_wd and e.mask & flags.CLOSE_WRITE for e in events):
                self.exec_closed = True
        self._before = before
        self.file.write(records)

    def record(self, **fields: Any) -> None:
        self.file.write([fields])

    def end(self, reason: str) -> None:
        self.pump()
        self.file.write(self._read_exec())
        self.record(
            kind="end", t=self.clock(), reason=reason, excluded_events=self.tree.excluded_events
        )
        self.file.close()
        self.close_exec_log()
        self.ino.close()


def _wait_fds(fds: Sequence[int], timeout: float | None) -> list[int]:
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        return [fd for fd, _ in poller.poll(None if timeout is None else int(timeout * 1000))]
    except InterruptedError:
        return []


def run_around(plan: Plan, argv: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Witness `argv` from its first instruction to its exit; its exit status
    (128 + N when killed by signal N)."""
    s = _Session(plan, trace_exec=plan.exec_)
    prefix = s.open_exec_log() if s.strace is not None else []
    s.record(kind="ready", t=s.clock())
    forward = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {sig: signal.getsignal(sig) for sig in forward}
    proc: subprocess.Popen[bytes] | None = None

    def relay(sig: int, _frame: Any) -> None:
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)

    for sig in forward:
        signal.signal(sig, relay)
    try:
        proc = subprocess.Popen([*prefix, *argv], env=env, preexec_fn=_pdeathsig)
        s.record(kind="run", t=s.clock(), pid=proc.pid, argv=list(argv))
        pidfd = os.pidfd_open(proc.pid)
        try:
            while True:
                ready = _wait_fds([s.ino.fileno(), pidfd], None)
                if s.ino.fileno() in ready:
                    s.pump()
                if pidfd in ready:
                    break
        finally:
            os.close(pidfd)
        status = proc.wait()
        s.pump()
        # strace (when it is the run) has exited, so its log is complete: read
        # it all now, so that every `proc_exit` comes before the run's `exit`
        s.file.write(s._read_exec())
        s.record(
            kind="exit",
            t=s.clock(),
            pid=proc.pid,
            status=status if status >= 0 else None,
            signal=-status if status < 0 else None,
        )
        deadline = s.clock() + DRAIN_S
        while s.strace is not None and not s.exec_closed and s.clock() < deadline:
            if _wait_fds([s.ino.fileno()], deadline - s.clock()):
                s.pump()
        s.end("the run exited")
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    return status if status >= 0 else 128 - status


def run_beside(plan: Plan, pid: int, ready_out: Any, control_fd: int) -> int:
    """Witness the process `pid` (this witness's parent) until `control_fd`
    reaches end of file or `pid` dies; tell `ready_out` when ready."""
    s = _Session(plan, trace_exec=False)
    s.record(kind="run", t=s.clock(), pid=pid, argv=[])
    s.record(kind="ready", t=s.clock())
    ready_out.write("ready\n")
    ready_out.flush()
    reason = "told to stop"
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        s.end("the witnessed process was gone")
        return 1
    try:
        while True:
            ready = _wait_fds([s.ino.fileno(), pidfd, control_fd], None)
            if s.ino.fileno() in ready:
                s.pump()
            if pidfd in ready:
                reason = "the witnessed process exited"
                break
            if control_fd in ready and not os.read(control_fd, 4096):
                break
    finally:
        os.close(pidfd)
    s.end(reason)
    return 0
