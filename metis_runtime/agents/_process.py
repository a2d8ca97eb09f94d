"""Child processes: their environment, their process groups, and no orphans.

Every child runs in its own session, so its process group id is its pid and
killing the group reaches whatever it started in that group. A child's own
children are in their own groups, so each agent is responsible for its
children's groups:

- `install_reaper()` registers, once per process, an exit handler and
  SIGTERM/SIGINT/SIGHUP handlers that kill the group of every live child
  (then chain to the previous handler: SIGINT still raises
  KeyboardInterrupt, SIGTERM still ends the process);
- a child asks the kernel for SIGTERM when its parent dies
  (`set_parent_death_signal`, Linux `PR_SET_PDEATHSIG`), so a parent killed
  with SIGKILL, whose handlers cannot run, still takes its children along;
  their handlers then take their own children.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from types import FrameType
from typing import Any

from attrs import frozen as attrs_frozen

from metis_trace import secret_name

from .._lifeline import PR_SET_CHILD_SUBREAPER
from .._lifeline import TREE_ENV
from .._lifeline import prctl

# Variables that let whoever sets them run code inside the child (or carry a
# sudo identity into it); a child never inherits them.
_DROPPED_EXACT = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"})
_DROPPED_PREFIXES = ("DYLD_", "SUDO_")


def sanitized_env(
    base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """`base` (default: os.environ) plus `extra`, minus the dropped variables.
    Dropping comes last, so a definition's `env` cannot put them back."""
    env = {**(os.environ if base is None else base), **(extra or {})}
    return {
        k: v
        for k, v in env.items()
        if k not in _DROPPED_EXACT and not k.startswith(_DROPPED_PREFIXES)
    }


PASSTHROUGH_ENV = "METIS_TOOL_ENV_PASSTHROUGH"


def tool_env(
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    passthrough: Iterable[str] | None = None,
) -> dict[str, str]:
    """The environment of tools' subprocesses: `sanitized_env(base, extra)`
    without secret-named variables (`secret_name`: `*_KEY`, `*_TOKEN`,
    `*_SECRET`, `*_PASSWORD`, `*_CREDENTIALS`, `DATABASE_URL`, ...), except
    those named in `passthrough` (default: the comma-separated names in
    `$METIS_TOOL_ENV_PASSTHROUGH`, set by `metis run --pass-env NAME`)."""
    env = sanitized_env(base, extra)
    if passthrough is None:
        passthrough = (os.environ if base is None else base).get(PASSTHROUGH_ENV, "").split(",")
    keep = {n.strip() for n in passthrough if n.strip()}
    return {k: v for k, v in env.items() if k in keep or not secret_name(k)}


_lock = threading.Lock()
_groups: set[int] = set()
_installed = False
_previous: dict[int, Any] = {}
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def register_group(pgid: int) -> None:
    with _lock:
        _groups.add(pgid)


def unregister_group(pgid: int) -> None:
    with _lock:
        _groups.discard(pgid)


def live_groups() -> tuple[int, ...]:
    with _lock:
        return tuple(sorted(_groups))


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False if it is gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # reused by another user's process: not ours any more
    return True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _process_stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the /proc/PID/stat fields after the command: state, ppid, pgrp,
    session, ...) of every live process (Linux: /proc; none elsewhere)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if len(fields) > 3:
            yield int(entry), fields


def _child_groups() -> set[int]:
    """Process groups of every direct child of this process (Linux: /proc),
    tools' subprocesses included, except our own group."""
    me, own = os.getpid(), os.getpgrp()
    return {int(f[2]) for _, f in _process_stats() if int(f[1]) == me and int(f[2]) != own}


_spared: set[int] = set()  # the shepherd: it must outlive us


def kill_all_groups(grace_s: float = 1.0) -> None:
    """SIGTERM every child group: the agents' (their handlers take their own
    children) and, where /proc shows them, those of other direct children
    such as tool subprocesses; wait up to `grace_s`, then SIGKILL what is left."""
    agents = set(live_groups())
    groups = tuple(sorted((agents | _child_groups()) - _spared))
    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    pending = [g for g in groups if group_alive(g)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        for pgid in pending:
            if pgid in agents:
                # pgid == the agent's pid: reap it if exited, so its zombie leaves
                # the group (tools' processes are left to their owners to reap).
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pgid, os.WNOHANG)
        pending = [g for g in pending if group_alive(g)]
    for pgid in pending:
        signal_group(pgid, signal.SIGKILL)
    with _lock:
        _groups.difference_update(groups)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    kill_all_groups(grace_s=0.5)
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    # Default action: restore it and re-deliver, so the exit status says "signal".
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_reaper() -> None:
    """Once per process: exit and signal handlers that kill every child group.
    Signal handlers are only installed from the main thread (Python's rule)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(kill_all_groups)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _SIGNALS:
        _previous[sig] = signal.getsignal(sig)
        signal.signal(sig, _on_signal)


_PR_SET_PDEATHSIG = 1


def set_parent_death_signal(expected_parent: int | None, sig: int = signal.SIGTERM) -> bool:
    """Linux: deliver `sig` to this process when its parent dies. If the
    parent is already gone (we were re-parented), exit at once. False where
    the call is not available (the exit handlers are then all there is)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)  # the parent died before we could ask: nobody is left to report to
    return bool(ok)


def on_terminate(callback: Callable[[], None]) -> None:
    """Run `callback` (from the main thread) before the reaper's SIGTERM handling."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        callback()
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, handler)


# --- the tree's processes die with it (specs/secrets.md, "Processes") -----------

SHEPHERD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shepherd.py")


def become_subreaper() -> bool:
    """Orphans of our descendants (`setsid`, double forks) become our
    children, not init's, so our exit handlers find them (`_child_groups`)."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


@attrs_frozen
class TreeGuard:
    """What `guard_tree` set up: the tree's token, its cgroup ("" if none
    could be made), and the shepherd's pid."""

    token: str
    cgroup: str
    shepherd: int
    subreaper: bool


_guard: list[TreeGuard] = []
_shepherd_pipe: list[int] = []


def _cgroup2_mount() -> str | None:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split()[4]
    except OSError:
        pass
    return None


def _make_cgroup(token: str) -> str:
    """A fresh cgroup v2 below ours, with us moved into it; "" where cgroup v2
    is not mounted or not writable (then the token and the subreaper serve)."""
    mount = _cgroup2_mount()
    if mount is None:
        return ""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            own = next((ln.strip()[3:] for ln in fh if ln.startswith("0::")), None)
    except OSError:
        return ""
    if own is None:
        return ""
    path = os.path.join(mount, own.lstrip("/"), f"metis-{token}")
    try:
        os.mkdir(path, 0o700)
    except OSError:
        return ""
    if not os.path.exists(os.path.join(path, "cgroup.kill")):  # Linux < 5.14
        with contextlib.suppress(OSError):
            os.rmdir(path)
        return ""
    return path


def _enter_cgroup(path: str) -> bool:
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        return False
    return True


def guard_tree() -> TreeGuard | None:
    """Once, in the root runtime of an agent tree: make every process of the
    tree die with it, even on SIGKILL. Marks the tree (`$METIS_TREE`, which
    every descendant inherits), makes this process a subreaper, starts the
    shepherd (before entering the cgroup, so a `cgroup.kill` spares it), and
    moves this process into a fresh cgroup where one can be made. None in a
    child agent (its root's guard covers it) or where it was done already."""
    if _guard:
        return _guard[0]
    if os.environ.get(TREE_ENV):
        become_subreaper()  # a child agent: its orphans are its own to kill at exit
        return None
    token = os.urandom(12).hex()
    subreaper = become_subreaper()
    cgroup = _make_cgroup(token)
    env = {k: v for k, v in os.environ.items() if k != TREE_ENV}
    read_end, write_end = os.pipe()  # both close-on-exec; the shepherd gets its copy as stdin
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", SHEPHERD, token, cgroup],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
    except OSError:
        os.close(write_end)
        if cgroup:
            with contextlib.suppress(OSError):
                os.rmdir(cgroup)
        return None
    finally:
        os.close(read_end)
    _shepherd_pipe.append(write_end)  # held open until this process is gone
    _spared.add(proc.pid)
    if cgroup and not _enter_cgroup(cgroup):
        cgroup = ""
    os.environ[TREE_ENV] = token
    guard = TreeGuard(token, cgroup, proc.pid, subreaper)
    _guard.append(guard)
    return guard


# --- background jobs detached on purpose (`metis run --detach-jobs`) ----------


def session_members(sid: int) -> list[int]:
    """Pids of the live (not zombie) processes of session `sid` (Linux: /proc)."""
    return [pid for pid, f in _process_stats() if int(f[3]) == sid and f[0] != "Z"]


def release_session(sid: int) -> None:
    """Let session `sid` (a detached job) outlive the run: the exit handlers
    spare its group, its processes leave the run's cgroup for the one the run
    came from, and the shepherd is told to spare the session. A process of
    the job that leaves the session (`setsid`) is not released, and one forked
    while its parent moves may stay in the run's cgroup: both die with the run."""
    _spared.add(sid)
    if not _guard:
        return
    guard = _guard[0]
    if guard.cgroup:
        parent = os.path.join(os.path.dirname(guard.cgroup), "cgroup.procs")
        for pid in session_members(sid):
            with contextlib.suppress(OSError), open(parent, "w") as fh:
                fh.write(str(pid))
    if _shepherd_pipe:
        with contextlib.suppress(OSError):
            os.write(_shepherd_pipe[0], f"spare {sid}\n".encode())
