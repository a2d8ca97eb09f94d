"""TRACE-2 in `metis conform`: which files a run wrote, read and scanned.

`run_files(path)` (the runtime's layout) lists them for a run directory or a
trace file;
`scan_files(paths, canaries, source)` reads each (bounded, regular files only)
and checks it with the pure `metis_model.check_run_files`; `merged` joins that
report to the trace's. Nothing here exits: unreadable input raises
`BadInput`, as everything a `metis conform` unit does.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path

import attrs

from metis_check import Report

__all__ = ["merged", "read_canaries", "run_files", "scan_files"]


def run_files(path: Path) -> list[Path]:
    """The files a run wrote (`metis_runtime._layout.run_files`)."""
    from metis_runtime._layout import run_files as listed

    return listed(path)


def read_canaries(path: Path) -> list[str]:
    """Values a workload planted: a JSON list of strings, or one per line."""
    from metis_runtime._input import input_lines
    from metis_runtime._input import read_input_text
    from metis_trace import InputError
    from metis_trace import decode_json

    from ._inputs import BadInput

    try:
        text = read_input_text(path)
        if text.lstrip().startswith("["):
            values = decode_json(text, source=str(path))
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise BadInput(f"{path}: the canaries must be a JSON list of strings")
            return [v for v in values if v]
        return [line for line in input_lines(text) if line]
    except InputError as exc:
        raise BadInput(exc.describe(str(path))) from exc


def scan_files(paths: Sequence[Path], canaries: Sequence[str], source: str) -> Report:
    """TRACE-2 over files, read bounded; bytes that are not UTF-8 are replaced
    (every credential family is ASCII)."""
    from metis_check import check_run_files
    from metis_runtime._input import read_input_bytes
    from metis_trace import InputError

    from ._inputs import BadInput

    def texts() -> Iterator[tuple[str, str]]:
        for p in paths:
            try:
                data = read_input_bytes(p)
            except InputError as exc:
                raise BadInput(exc.describe(str(p))) from exc
            yield str(p), data.decode("utf-8", "replace")

    return check_run_files(texts(), canaries, source=source)


def merged(first: Report, second: Report) -> Report:
    """One report: the first's violations, then the second's; checks added up."""
    checks = dict(first.checks)
    for k, n in second.checks.items():
        checks[k] = checks.get(k, 0) + n
    return attrs.evolve(
        first,
        violations=first.violations + second.violations,
        checks=checks,
        events=first.events + second.events,
    )


# --- coverage --------------------------------------------------------------------------

REPORT_LOG_ENV = "METIS_REPORT_LOG"


def log_reports(reports: Sequence[Report]) -> None:
    """Add each report's counts to `$METIS_REPORT_LOG`, one JSON line each,
    where the pytest plugin counts what `metis conform` checked in a test."""
    import json
    import os

    log = os.environ.get(REPORT_LOG_ENV)
    if not log or not reports:
        return
    lines = []
    for r in reports:
        source = r.source
        if source and source != "-" and Path(source).exists():
            source = str(Path(source).resolve())
        lines.append(
            json.dumps({"source": source, "checks": r.checks, "transitions": r.transitions})
        )
    try:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
    except OSError:
        pass  # a missing log must not change what conform reports


def coverage_table(reports: Sequence[Report]) -> str:
    """Per invariant ID and per model transition, how often the reports
    exercised it, and what they never reached."""
    from metis_check import TRANSITIONS
    from metis_check import Coverage

    from ._output import table

    cov = Coverage()
    cov.add_all(reports)
    summary = cov.summary()
    ids = table(["invariant", "checks"], [(k, str(n)) for k, n in summary["invariants"].items()])
    steps = table(
        ["transition", "taken"], [(t, str(summary["transitions"][t])) for t in TRANSITIONS]
    )
    never_ids = ", ".join(summary["never_checked"]) or "none"
    never_steps = ", ".join(summary["never_taken"]) or "none"
    return (
        f"coverage over {cov.reports} reports\n{ids}\n{steps}\n"
        f"never checked: {never_ids}\nnever taken: {never_steps}"
    )
