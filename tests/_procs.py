"""Looking at processes from a test (Linux: /proc).

"Alive" means the process exists and is neither a zombie nor dead: an
orphaned zombie still counts for kill(pid, 0), because PID 1 of a container
(or a subreaper) may never reap it, but it has ended all the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: [state, ppid,
    pgrp, ...]; None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def live_processes() -> Iterator[tuple[int, list[str]]]:
    """Every live process: its pid and its `stat_fields`."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields is not None and fields[0] not in ("Z", "X"):
                yield int(entry), fields


def proc_file(pid: int, name: str) -> bytes:
    """/proc/PID/NAME (`cmdline`, `environ`: NUL-separated), empty where it
    cannot be read (the process ended, or is not ours)."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read()
    except OSError:
        return b""
