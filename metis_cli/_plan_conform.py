"""Turn logs through `metis conform`: one file, or a folder of them.

A file whose first line is a turn log header (`format: metis-turnlog`) is
checked with `check_turn_log`, with the traces its segments name (relative to
the turn log) when they exist. A folder holding turn logs (such as a
workspace's `.metis/plan/turns/`) is checked file by file and as a whole
(`check_turn_logs`). Unreadable or malformed input is a one-line error naming
the file and line, exit 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from metis_model import Report, Violation
from metis_model.plan import check_turn_log, check_turn_logs
from metis_model.trace import (
    InputError,
    ResumeRecord,
    TraceEvent,
    TraceHeader,
    TurnHeader,
    TurnRecord,
    read_turn_log,
)

from ._output import bad_input, read_trace_file

TURNLOG_MARK = '"metis-turnlog"'
_HEAD_BYTES = 4096


def is_turn_log(path: Path) -> bool:
    """Whether `path` is a regular file whose first line is a turn log header.
    Anything else (a FIFO, a device, a trace) is left to the trace reader,
    which refuses what is not a regular file."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, _HEAD_BYTES).split(b"\n", 1)[0]
    except OSError:
        return False
    finally:
        os.close(fd)
    return TURNLOG_MARK.encode() in head and b'"header"' in head


def turn_logs_in(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("*.jsonl")) if is_turn_log(p)]


def read_turn_log_file(path: Path) -> tuple[TurnHeader, list[TurnRecord], list[int]]:
    """A turn log through the hardened reader; a bad one is a one-line error, exit 2."""
    from metis_runtime._input import input_lines, read_input_text

    try:
        return read_turn_log(input_lines(read_input_text(path)))
    except InputError as exc:
        bad_input(exc.describe(str(path)))


def _segment_traces(
    path: Path, header: TurnHeader, records: Sequence[TurnRecord]
) -> dict[int, tuple[TraceHeader, Sequence[TraceEvent]]] | None:
    named = {1: header.trace}
    for r in records:
        if isinstance(r, ResumeRecord):
            named[r.segment] = r.trace
    found: dict[int, tuple[TraceHeader, Sequence[TraceEvent]]] = {}
    for segment, rel in named.items():
        if rel is None:
            continue
        trace = (path.parent / rel).resolve()
        if not trace.is_file():
            return None  # without every segment's trace, no cross-check at all
        th, events, _ = read_trace_file(trace)
        found[segment] = (th, events)
    return found or None


def check_turn_log_file(path: Path) -> Report:
    header, records, lines = read_turn_log_file(path)
    traces = _segment_traces(path, header, records)
    return check_turn_log(header, records, source=str(path), line_of=lines, traces=traces)


def check_turn_dir(folder: Path, files: Sequence[Path]) -> Report:
    """Each turn log of `folder`, then the turns together (one report)."""
    logs = {}
    violations: list[Violation] = []
    checks: dict[str, int] = {}
    events = 0
    for path in files:
        report = check_turn_log_file(path)
        violations += [
            Violation(v.invariant, v.index, f"{path.name}: {v.message}", v.line, v.state, v.slice)
            for v in report.violations
        ]
        for k, n in report.checks.items():
            checks[k] = checks.get(k, 0) + n
        events += report.events
        header, records, _ = read_turn_log_file(path)
        logs[path.name] = (header, records)
    across = check_turn_logs(logs, source=str(folder))
    for k, n in across.checks.items():
        checks[k] = checks.get(k, 0) + n
    return Report(str(folder), events, (*violations, *across.violations), checks)
