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
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

from metis_model.trace import secret_name

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


def _child_groups() -> set[int]:
    """Process groups of every direct child of this process (Linux: /proc),
    tools' subprocesses included, except our own group."""
    me, own = os.getpid(), os.getpgrp()
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command: state, ppid, pgrp.
        if len(fields) > 2 and int(fields[1]) == me and int(fields[2]) != own:
            found.add(int(fields[2]))
    return found


def kill_all_groups(grace_s: float = 1.0) -> None:
    """SIGTERM every child group: the agents' (their handlers take their own
    children) and, where /proc shows them, those of other direct children
    such as tool subprocesses; wait up to `grace_s`, then SIGKILL what is left."""
    agents = set(live_groups())
    groups = tuple(sorted(agents | _child_groups()))
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
