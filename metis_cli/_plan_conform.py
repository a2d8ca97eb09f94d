"""Turn logs through `metis conform`: one file, or a folder of them.

A file whose first line is a turn log header (`format: metis-turnlog`) is
checked with `check_turn_log`, with the traces its segments name (relative to
the turn log) when they all exist: each trace is also replayed with
`check_trace`, and cross-checked with the turn log. A folder holding turn logs
(such as a workspace's `.metis/plan/turns/`) is checked file by file and as a
whole (`check_turn_logs`). A file that cannot be read is `BadInput` (one line
naming the file, line and field), which `metis conform` reports with exit 2.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from metis_check import Report
from metis_check import Violation
from metis_check import check_trace
from metis_check import check_turn_log
from metis_check import check_turn_logs
from metis_trace import InputError
from metis_trace import ResumeRecord
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnHeader
from metis_trace import TurnRecord
from metis_trace import read_trace_numbered
from metis_trace import read_turn_log

from ._inputs import BadInput
from ._inputs import read_text

TURNLOG_MARK = b'"metis-turnlog"'
_HEAD_BYTES = 4096


def looks_like_turn_log(first_line: str) -> bool:
    return '"metis-turnlog"' in first_line and '"header"' in first_line


def is_turn_log(path: Path) -> bool:
    """Whether `path` is a regular file whose first line is a turn log header.
    Anything else (a FIFO, a device, a trace) is left to the trace reader,
    which refuses what is not a regular file; a FIFO is never opened here."""
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
    return TURNLOG_MARK in head and b'"header"' in head


def turn_logs_in(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("*.jsonl")) if is_turn_log(p)]


def _turn_log(text: str, source: str) -> tuple[TurnHeader, list[TurnRecord], list[int]]:
    try:
        return read_turn_log(text.split("\n"))
    except InputError as exc:
        raise BadInput(exc.describe(source)) from exc


def _segment_traces(
    path: Path, header: TurnHeader, records: Sequence[TurnRecord]
) -> dict[int, tuple[TraceHeader, list[TraceEvent], list[int], str]] | None:
    named = {1: header.trace}
    for r in records:
        if isinstance(r, ResumeRecord):
            named[r.segment] = r.trace
    found = {}
    for segment, rel in named.items():
        if rel is None:
            continue
        trace = path.parent / rel
        if not trace.is_file():
            return None  # without every segment's trace there is no cross-check
        try:
            th, events, lines = read_trace_numbered(read_text(str(trace)).split("\n"))
        except InputError as exc:
            raise BadInput(exc.describe(str(trace))) from exc
        found[segment] = (th, events, lines, str(trace))
    return found or None


def check_turn_log_text(text: str, source: str) -> Report:
    """One turn log, and the traces of its segments when they are beside it."""
    path = Path(source)
    header, records, lines = _turn_log(text, source)
    segments = _segment_traces(path, header, records)
    traces = {k: (th, ev) for k, (th, ev, _, _) in segments.items()} if segments else None
    report = check_turn_log(header, records, source=source, line_of=lines, traces=traces)
    extra: list[Violation] = []
    checks = dict(report.checks)
    for th, events, lines_of, name in (segments or {}).values():
        replay = check_trace(events, th, source=name, line_of=lines_of)
        extra += [attrs_with_source(v, name) for v in replay.violations]
        for k, n in replay.checks.items():
            checks[k] = checks.get(k, 0) + n
    return Report(source, report.events, (*report.violations, *extra), checks)


def attrs_with_source(v: Violation, source: str) -> Violation:
    return Violation(v.invariant, v.index, f"{source}: {v.message}", v.line, v.state, v.slice)


def check_turn_dir(folder: Path) -> Report | None:
    """Every turn log of `folder`, then the turns together; None without any."""
    files = turn_logs_in(folder)
    if not files:
        return None
    logs = {}
    violations: list[Violation] = []
    checks: dict[str, int] = {}
    records = 0
    for path in files:
        text = read_text(str(path))
        report = check_turn_log_text(text, str(path))
        violations += [attrs_with_source(v, path.name) for v in report.violations]
        for k, n in report.checks.items():
            checks[k] = checks.get(k, 0) + n
        records += report.events
        header, recs, _ = _turn_log(text, str(path))
        logs[path.name] = (header, recs)
    across = check_turn_logs(logs, source=str(folder))
    for k, n in across.checks.items():
        checks[k] = checks.get(k, 0) + n
    return Report(str(folder), records, (*violations, *across.violations), checks)
