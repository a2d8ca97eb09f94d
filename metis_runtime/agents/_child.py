"""`python -m metis_runtime.agents._child CONFIG.json`: one child agent process.

Before anything else it asks the kernel for SIGTERM when its parent dies and
installs the reaper (exit and signal handlers that kill its own children's
groups). SIGTERM then cancels its loop (the trace ends `cancelled`) and, if
the loop does not end within a grace period, the process exits anyway.
Exit status: 0 completed, 1 any other end, 2 an unusable config.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from metis_trace import CancelCause
from metis_trace import InputError
from metis_trace import model_strict

from .._errors import MetisRuntimeError
from .._input import read_input_text
from ._config import ChildConfig
from ._process import guard_tree
from ._process import install_reaper
from ._process import kill_all_groups
from ._process import set_parent_death_signal
from ._runtime import build_child
from ._runtime import drive_child

GRACE_S = 3.0


def _load(path: str) -> ChildConfig:
    try:  # a regular file, bounded, strict JSON and strict types
        return model_strict(ChildConfig, read_input_text(path), source=path)
    except InputError as exc:
        print(f"metis child: unusable config: {exc}", file=sys.stderr)
        sys.exit(2)


async def _main(config: ChildConfig) -> int:
    runtime = build_child(config)
    loop = asyncio.get_running_loop()

    def on_term() -> None:
        kill_all_groups(grace_s=0.5)  # our children first, they may be mid-effect
        # The parent's SIGTERM is the cancel's recorded source (SCHED-5).
        runtime.loop.signal_received(signal.SIGTERM)
        runtime.loop.cancel("terminated by the parent", CancelCause.PARENT)
        loop.call_later(GRACE_S, os._exit, 1)

    loop.add_signal_handler(signal.SIGTERM, on_term)
    result = await drive_child(runtime, config)
    return 0 if result.status.value == "completed" else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m metis_runtime.agents._child CONFIG.json", file=sys.stderr)
        return 2
    config = _load(args[0])
    set_parent_death_signal(config.parent_pid)
    guard_tree()  # a subreaper: its orphans are its own to kill when it ends
    install_reaper()
    try:
        return asyncio.run(_main(config))
    except MetisRuntimeError as exc:
        print(f"metis child {config.agent_id}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
