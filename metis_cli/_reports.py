"""`metis conform` results as text, JSON and GitHub workflow annotations.

Every finding is written, never only the first. A finding is a violation
(fails), an undecided check (fails unless its status is allowed, then it is
a notice), a reader's warning, or a file that could not be read (an error).
SARIF is in `_sarif.py`, JUnit XML in `_junit.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from metis_check import Undecided
from metis_check import Violation
from metis_model import BY_ID

from ._junit import junit_report
from ._junit import where as _where
from ._transcripts import FileResult
from ._transcripts import Run

if TYPE_CHECKING:
    from ._sarif import SarifOptions


# -- text ------------------------------------------------------------------------------


def text_report(run: Run) -> str:
    out: list[str] = []
    for result in run.results:
        if result.report is None:
            continue  # its one-line error went to standard error
        report = result.report
        head = f"{report.source}: {report.verdict} ({report.events} events"
        head += f"; format {result.detected})" if result.detected else ")"
        if report.verdict == "undetermined" and report.passes(run.allowed):
            head += " — allowed"
        out.append(head)
        for v in report.violations:
            out.append(f"  {_where(v.line, v.index)}: {v.cited} violated")
            if v.invariant in BY_ID:
                out.append(f"    invariant: {BY_ID[v.invariant].statement}")
            out.append(f"    what:      {v.message}")
            if v.state:
                out.append(f"    state:     {v.state}")
            if v.slice:
                out.append(f"    slice:     events {list(v.slice)}")
        for u in report.undecided:
            out.append(f"  {_where(u.line, u.index)}: {u.status} ({u.invariant}): {u.message}")
        for note in report.notes:
            out.append(f"  warning: {note.one_line()}")
    if len(run.results) > 1:
        out.extend(aggregate(run))
    return "\n".join(out)


def aggregate(run: Run) -> list[str]:
    """One line per invariant (and provider rule): how often, in how many files, the first."""
    verdicts = Counter(r.status for r in run.results)
    order = ("conforms", "violates", "undetermined", "unreadable")
    lines = [
        f"{len(run.results)} files: "
        + ", ".join(f"{verdicts[v]} {v}" for v in order if verdicts[v])
    ]
    counts: Counter[str] = Counter()
    files: dict[str, set[str]] = {}
    first: dict[str, str] = {}
    for result in run.results:
        report = result.report
        if report is None:
            continue
        found: list[tuple[str, Violation | Undecided]] = [
            *((v.cited, v) for v in report.violations),
            *((f"{u.status} ({u.invariant})", u) for u in report.undecided),
        ]
        for key, item in found:
            counts[key] += 1
            files.setdefault(key, set()).add(result.source)
            first.setdefault(
                key, f"{result.source}: {_where(item.line, item.index)}: {item.message}"
            )
    for key in sorted(counts):
        lines.append(f"  {key}: {counts[key]} in {len(files[key])} file(s); first: {first[key]}")
    return lines


def errors(run: Run) -> list[str]:
    return [r.error for r in run.results if r.error]


# -- JSON ------------------------------------------------------------------------------


def result_json(result: FileResult, allowed: frozenset[str]) -> dict[str, Any]:
    if result.report is None:
        return {"source": result.source, "verdict": "unreadable", "error": result.error}
    out = result.report.to_json()
    out["passes"] = result.report.passes(allowed)
    if result.detected:
        out["detected"] = result.detected
    return out


def json_report(run: Run) -> str:
    rows = [result_json(r, run.allowed) for r in run.results]
    payload: Any = rows[0] if len(rows) == 1 else rows
    return json.dumps(payload, indent=2, default=str)


# -- GitHub workflow commands ----------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, message: str, file: str, line: int | None, title: str) -> str:
    props = [f"file={_escape_property(file)}"]
    if line is not None:
        props.append(f"line={line}")
    props.append(f"title={_escape_property(title)}")
    return f"::{kind} {','.join(props)}::{_escape_data(message)}"


def github_report(run: Run) -> str:
    """One workflow command per finding (actions/toolkit `command.ts` escaping)."""
    out: list[str] = []
    for result in run.results:
        report = result.report
        if report is None:
            out.append(_command("error", result.error, result.source, None, "unreadable input"))
            continue
        for v in report.violations:
            out.append(_command("error", v.message, result.source, v.line, f"{v.cited} violated"))
        for u in report.undecided:
            kind = "notice" if u.status in run.allowed else "warning"
            out.append(
                _command(kind, u.message, result.source, u.line, f"{u.status} ({u.invariant})")
            )
        for note in report.notes:
            out.append(_command("notice", note.message, result.source, note.line, "metis conform"))
    return "\n".join(out)


WRITERS = {"text": text_report, "json": json_report, "junit": junit_report, "github": github_report}


def write_all(
    run: Run, targets: Sequence[tuple[str, str | None]], sarif: SarifOptions | None = None
) -> dict[str, str]:
    """Each requested output's text, by kind (SARIF included, with its options)."""
    from ._sarif import sarif_report

    texts: dict[str, str] = {}
    for kind, _ in targets:
        if kind not in texts:
            texts[kind] = sarif_report(run, sarif) if kind == "sarif" else WRITERS[kind](run)
    return texts
