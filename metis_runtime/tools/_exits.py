"""Exit records: a bash call's outcome kept outside the process that ran it
(specs/loop.md, "Resume"; RETRY-4).

The bash tool writes `<exits>/<occ>.json` the moment its command's process
has exited and its output is read, before it returns: the exit status and
the result text (already bounded to the tool's output limit), redacted,
0600, through a temporary file fsynced and renamed (`write_private_json`).
A process killed after that, but before the trace's `commit`, leaves the
record behind; the resuming process commits the call from it (`recovered`)
instead of stubbing it `unknown`. A process killed before the record exists
leaves none: the call stays `unknown`, never reported as not run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

from metis_trace import InputError
from metis_trace import decode_json

from .._input import open_regular
from .._input import read_fd_bounded
from .._private import write_private_json

EXITS = "exits"  # the folder's name in the run's agent tree
_OCC = re.compile(r"\d{1,9}\.\d{1,9}")
_LIMIT = 1 << 20  # a record holds at most the tool's bounded output, escaped


@attrs.frozen
class ExitRecord:
    """What a finished call's process left: its exit status (None if unknown,
    negative for a signal) and the result text the tool returned."""

    occ: str
    exit_status: int | None
    content: str
    is_error: bool


def record_path(folder: Path, occ: str) -> Path:
    if not _OCC.fullmatch(occ):
        raise ValueError(f"not a call occurrence: {occ!r}")
    return folder / f"{occ}.json"


def write_exit_record(folder: Path, record: ExitRecord) -> None:
    write_private_json(
        record_path(folder, record.occ),
        {
            "occ": record.occ,
            "exit_status": record.exit_status,
            "content": record.content,
            "is_error": record.is_error,
        },
    )


def read_exit_record(folder: Path, occ: str) -> ExitRecord | None:
    """The record of `occ`, or None if there is none or it is unusable (a
    resume then keeps the call `unknown`: a bad record is never trusted)."""
    path = record_path(folder, occ)
    try:
        fd = open_regular(path)
    except InputError:
        return None
    try:
        raw = read_fd_bounded(fd, str(path), limit=_LIMIT)
        entry = decode_json(raw.decode("utf-8"), source=str(path))
    except (InputError, OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    if not isinstance(entry, dict) or entry.get("occ") != occ:
        return None
    status, content, is_error = (
        entry.get("exit_status"),
        entry.get("content"),
        entry.get("is_error"),
    )
    if status is not None and type(status) is not int:
        return None
    if not isinstance(content, str) or type(is_error) is not bool:
        return None
    return ExitRecord(occ, status, content, is_error)
