"""What `metis conform` checks: units of input, loaded and checked without exiting.

A unit is one file (or `-`, standard input), a Claude Code session together
with its sub-agents' files (`<session>/subagents/**/agent-*.jsonl`), or a run
directory of metis traces (a tree of agents). Checking a unit never raises and
never exits: bad input becomes the result's one-line `error`, so a corpus run
reports every file. Loading and checking are separate steps, so a distributed
engine can read on the client and check on its workers.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from metis_check import Report
from metis_check.transcripts import FORMATS as TRANSCRIPT_FORMATS

from ._inputs import STDIN
from ._inputs import BadInput
from ._inputs import read_text

if TYPE_CHECKING:
    from metis_trace import TraceEvent
    from metis_trace import TraceHeader

# The formats `metis conform` and `metis draw` read (`--format`): metis
# traces, detection, and every transcript format the checker reads.
FORMATS = ("trace", "auto", *TRANSCRIPT_FORMATS)
TRANSCRIPT_SUFFIXES = (".jsonl", ".json", ".ndjson")


@attrs.frozen
class Unit:
    path: str  # a file, `-`, or a run directory of traces
    companions: tuple[str, ...] = ()  # a Claude Code session's sub-agent files
    canaries: tuple[str, ...] = ()  # values a workload planted (TRACE-2, for traces)
    strict: bool = False  # a transcript: also the strict providers' rules (OAR-6)


@attrs.frozen
class Loaded:
    """A unit's text, read: what a worker needs to check it anywhere."""

    unit: Unit
    text: str = ""
    companions: tuple[tuple[str, str], ...] = ()  # (name relative to the session, text)
    error: str = ""


@attrs.frozen
class FileResult:
    source: str
    report: Report | None = None
    error: str = ""  # one-line bad-input message, when the unit could not be checked
    detected: str = ""  # `--format auto`: the format found, and why

    @property
    def format(self) -> str:
        return self.report.format if self.report is not None else ""

    @property
    def status(self) -> str:
        """The verdict, or `unreadable`."""
        return self.report.verdict if self.report is not None else "unreadable"


@attrs.frozen
class Run:
    """Everything one `metis conform` found, and which undecided statuses pass."""

    results: tuple[FileResult, ...]
    allowed: frozenset[str] = frozenset()

    def passes(self, result: FileResult) -> bool:
        return result.report is not None and result.report.passes(self.allowed)

    @property
    def exit_code(self) -> int:
        if any(r.error for r in self.results):
            return 2
        return 0 if all(self.passes(r) for r in self.results) else 1


def companions_of(session: Path) -> tuple[str, ...]:
    folder = session.with_suffix("") / "subagents"
    if not folder.is_dir():
        return ()
    return tuple(str(p) for p in sorted(folder.rglob("agent-*.jsonl")))


def _has_glob(arg: str) -> bool:
    return any(ch in arg for ch in "*?[")


def _files_below(folder: Path) -> list[Path]:
    found = sorted(p for p in folder.rglob("*") if p.suffix in TRANSCRIPT_SUFFIXES and p.is_file())
    # A Claude Code session's sub-agent files are checked with their session.
    sessions = {p.with_suffix("") for p in found}
    return [p for p in found if not _is_companion(p, sessions)]


def _is_companion(path: Path, sessions: set[Path]) -> bool:
    parts = path.parts
    if "subagents" not in parts:
        return False
    session_dir = Path(*parts[: parts.index("subagents")])
    return session_dir in sessions


def expand(args: Iterable[str], fmt: str) -> list[Unit]:
    """Files, directories and globs into units, in a stable order.

    With `--format trace` a directory is one run (a tree of agents); otherwise
    every `*.jsonl` / `*.json` below it is a transcript. A glob that matches
    nothing is bad input.
    """
    units: list[Unit] = []
    for arg in args:
        if arg == STDIN:
            units.append(Unit(STDIN))
            continue
        if _has_glob(arg) and not os.path.exists(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                raise BadInput(f"{arg}: matches no file")
            units.extend(u for m in matches for u in expand([m], fmt))
            continue
        path = Path(arg)
        if path.is_dir() and fmt != "trace":
            below = _files_below(path)
            if not below:
                raise BadInput(f"{arg}: no *.jsonl or *.json file below it")
            units.extend(_file_unit(p, fmt) for p in below)
        else:
            units.append(_file_unit(path, fmt))
    return units


def _file_unit(path: Path, fmt: str) -> Unit:
    if fmt in ("claude-code", "auto") and path.suffix == ".jsonl" and path.is_file():
        return Unit(str(path), companions_of(path))
    return Unit(str(path))


def load(unit: Unit) -> Loaded:
    if os.path.isdir(unit.path):
        return Loaded(unit)  # a run directory: its traces are read where they are checked
    try:
        text = read_text(unit.path)
        base = Path(unit.path).parent
        companions = tuple((str(Path(c).relative_to(base)), read_text(c)) for c in unit.companions)
    except BadInput as exc:
        return Loaded(unit, error=str(exc))
    return Loaded(unit, text, companions)


def check_loaded(loaded: Loaded, fmt: str) -> FileResult:
    """Check one loaded unit; every failure is a result, never an exception."""
    from metis_check.transcripts import check_claude_code_tree
    from metis_check.transcripts import check_transcript
    from metis_check.transcripts import detect_format
    from metis_trace import InputError

    source = loaded.unit.path
    if loaded.error:
        return FileResult(source, error=loaded.error)
    detected = ""
    try:
        if fmt == "auto":
            fmt, why = _detect(loaded.text, source, detect_format)
            detected = f"{fmt}, detected from {why}"
        if fmt == "trace":
            return FileResult(source, _check_trace(loaded), detected=detected)
        if fmt == "claude-code":
            report = check_claude_code_tree(loaded.text, dict(loaded.companions), source=source)
        else:
            report = check_transcript(
                loaded.text,
                fmt,  # type: ignore[arg-type]
                source=source,
                strict=loaded.unit.strict,
            )
    except InputError as exc:
        return FileResult(source, error=exc.describe(source))
    except BadInput as exc:
        return FileResult(source, error=str(exc))
    except RecursionError:
        return FileResult(source, error=f"{source}: nested too deeply to read")
    return FileResult(source, report, detected=detected)


def _detect(text: str, source: str, detect_format: object) -> tuple[str, str]:
    first = text.lstrip()[:4096]
    if first.startswith("{") and '"metis-trace"' in first.split("\n", 1)[0]:
        return "trace", "a metis trace header"
    if first.startswith("{") and '"metis-turnlog"' in first.split("\n", 1)[0]:
        return "trace", "a metis plan turn log header"
    return detect_format(text, source)  # type: ignore[operator,no-any-return]


def run_traces(run_dir: Path) -> dict[str, tuple[TraceHeader, list[TraceEvent]]]:
    """Every trace.jsonl below a run directory (a tree of agents), by its path there."""
    from metis_trace import TraceFormatError
    from metis_trace import read_trace_numbered

    traces = {}
    for trace in sorted(run_dir.rglob("trace.jsonl")):
        try:
            header, events, _ = read_trace_numbered(read_text(str(trace)).split("\n"))
        except TraceFormatError as exc:
            raise BadInput(exc.describe(str(trace))) from exc
        traces[str(trace.relative_to(run_dir))] = (header, events)
    return traces


def _check_trace(loaded: Loaded) -> Report:
    from metis_check import check_trace
    from metis_check import check_trace_tree
    from metis_trace import TraceFormatError
    from metis_trace import read_trace_numbered

    from ._plan_conform import check_turn_dir
    from ._plan_conform import check_turn_log_text
    from ._plan_conform import looks_like_turn_log

    path = loaded.unit.path
    if os.path.isdir(path):
        turns = check_turn_dir(Path(path))  # a folder of plan turn logs (specs/plan.md)
        if turns is not None:
            return turns
        traces = run_traces(Path(path))
        if not traces:
            raise BadInput(f"{path}: no trace.jsonl below it")
        return _with_run_files(check_trace_tree(traces, source=path), loaded.unit)
    if looks_like_turn_log(loaded.text.lstrip()[:4096].split("\n", 1)[0]):
        return check_turn_log_text(loaded.text, path)
    try:
        header, events, line_of = read_trace_numbered(loaded.text.split("\n"))
    except TraceFormatError as exc:
        raise BadInput(exc.describe(path)) from exc
    report = check_trace(events, header, source=path, line_of=line_of)
    return report if path == STDIN else _with_run_files(report, loaded.unit)


def _with_run_files(report: Report, unit: Unit) -> Report:
    """The trace's report, and TRACE-2 over the files its run wrote."""
    from ._run_files import merged
    from ._run_files import run_files
    from ._run_files import scan_files

    files = run_files(Path(unit.path))
    return merged(report, scan_files(files, unit.canaries, unit.path))


def check_unit(unit: Unit, fmt: str) -> FileResult:
    """Load and check one unit (what a pool worker runs)."""
    return check_loaded(load(unit), fmt)


def check_transcript_file(path: Path, fmt: str) -> Report:
    """One transcript checked, or a one-line error and exit 2 (for `metis demo`)."""
    from ._output import bad_input

    result = check_unit(_file_unit(path, fmt), fmt)
    if result.report is None:
        bad_input(result.error)
    return result.report
