"""TRACE-2: no file a run writes holds a credential.

`check_run_files(files, canaries)` scans the texts of a run's files (the
trace, the journal, offloaded results, children's configs, results and
traces, progress output) with the shared detector `find_credentials`, and,
independently of its patterns, for the exact values a workload declares it
planted (`canaries`: as written, and as a JSON string would hold them). A
finding is reported by file, line and column and by family, never by value:
the report must not leak what it found.

Pure: the caller reads the files (`metis conform`, the pytest plugin).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Sequence

from metis_trace import find_credentials

from ._report import Report
from ._report import Violation

__all__ = ["canary_forms", "check_run_files", "scan_text"]


def canary_forms(canary: str) -> tuple[str, ...]:
    """A planted value as a file may hold it: as is, and inside a JSON string
    (escaped; with non-ASCII as `\\uXXXX` too)."""
    forms = {canary, json.dumps(canary)[1:-1], json.dumps(canary, ensure_ascii=False)[1:-1]}
    return tuple(sorted(f for f in forms if f))


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def scan_text(name: str, text: str, canaries: Sequence[str] = ()) -> list[Violation]:
    """Every credential and planted canary in one file's text."""
    out: list[Violation] = []
    for f in find_credentials(text):
        line, col = _line_col(text, f.start)
        out.append(
            Violation(
                invariant="TRACE-2",
                index=0,
                line=line,
                message=f"{name}: line {line}, column {col}: a {f.family} credential "
                f"({f.end - f.start} characters)",
            )
        )
    for k, canary in enumerate(canaries, 1):
        for form in canary_forms(canary):
            at = text.find(form)
            if at < 0:
                continue
            line, col = _line_col(text, at)
            out.append(
                Violation(
                    invariant="TRACE-2",
                    index=0,
                    line=line,
                    message=f"{name}: line {line}, column {col}: planted canary #{k}",
                )
            )
            break
    return sorted(out, key=lambda v: (v.line or 0, v.message))


def check_run_files(
    files: Iterable[tuple[str, str]], canaries: Sequence[str] = (), *, source: str = "<run files>"
) -> Report:
    """TRACE-2 over `(name, text)` pairs: one check per file scanned."""
    violations: list[Violation] = []
    scanned = 0
    for name, text in files:
        scanned += 1
        violations.extend(scan_text(name, text, canaries))
    return Report(
        source=source,
        events=0,
        violations=tuple(violations),
        checks={"TRACE-2": scanned} if scanned else {},
    )
