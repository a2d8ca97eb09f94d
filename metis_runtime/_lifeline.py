"""What ties a subprocess's life to the runtime's (specs/secrets.md, "Processes").

`die_with_parent` is the `preexec_fn` of every subprocess metis starts (bash,
search workers, child agents): Linux `PR_SET_PDEATHSIG` with SIGKILL, so the
subprocess dies when the runtime does, even on SIGKILL. It is not inherited
across fork: what the subprocess itself starts is found by the tree's mark
(`TREE_ENV`), cgroup and shepherd (`metis_runtime.agents._process.guard_tree`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
TREE_ENV = "METIS_TREE"  # every process of an agent tree inherits it


def prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent (thread) dies."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def tree_mark() -> dict[str, str]:
    """The tree's mark, for a subprocess started with an environment of its own."""
    token = os.environ.get(TREE_ENV)
    return {TREE_ENV: token} if token else {}


def keeper_preexec() -> None:
    """The keeper's `preexec_fn` (tools/_keeper.py): `die_with_parent`, and
    SIGUSR1 (its "detach") blocked until it has a handler for it."""
    die_with_parent()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
