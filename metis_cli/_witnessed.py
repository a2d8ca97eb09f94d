"""The witness file beside a trace, checked against the run's traces (`metis conform`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ._output import bad_input
from ._output import read_trace_file

if TYPE_CHECKING:
    from metis_check import WitnessReport
    from metis_trace import WitnessSession

    from ._transcripts import FileResult
    from ._transcripts import Unit


def _root_trace(target: Path) -> Path:
    return target / "trace.jsonl" if target.is_dir() else target


def _tree_traces(root: Path) -> list[Path]:
    """The root trace, then every child agent's (they live in the tree's `agents/`)."""
    tree = root.parent if root.name == "trace.jsonl" else root.with_name(root.name + ".agents")
    return [root, *sorted((tree / "agents").glob("*/trace.jsonl"))]


def read_witness_file(path: Path) -> list[WitnessSession]:
    """A witness file's sessions; a malformed one is a one-line error, exit 2."""
    from metis_runtime._input import input_lines
    from metis_runtime._input import read_input_text
    from metis_trace import InputError
    from metis_trace import read_witness

    try:
        return read_witness(input_lines(read_input_text(path)))
    except InputError as exc:
        bad_input(exc.describe(str(path)))


def witness_report(target: Path, witness: Path | None) -> WitnessReport | None:
    """Check the witness of the run at `target` (a trace or a run folder): the
    file given, else `<trace>.witness` when it exists, else None."""
    from metis_check import WitnessedTrace
    from metis_check import check_witness

    root = _root_trace(target)
    path = witness if witness is not None else root.with_name(root.name + ".witness")
    if witness is None and not path.exists():
        return None
    sessions = read_witness_file(path)
    if not root.is_file():
        bad_input(f"{target}: no trace to check the witness against")
    traces = []
    for p in _tree_traces(root):
        header, events, _ = read_trace_file(p)
        traces.append(WitnessedTrace(str(p), header, events))
    return check_witness(sessions, traces, source=str(path))


def with_witness(result: FileResult, unit: Unit, witness: Path | None) -> FileResult:
    """`result` of a trace (or run folder) with its witness's findings: the
    violations it shows, and warnings for what it could not observe."""
    report = result.report
    if report is None or report.format not in ("", "trace") or unit.path == "-":
        return result
    found = witness_report(Path(unit.path), witness)
    if found is None:
        return result
    from metis_check import Note

    where = found.source
    violations = tuple(
        attrs.evolve(v, message=f"witnessed at {where} line {v.witness_line}: {v.message}")
        for v in found.violations
    )
    checked = ", ".join(f"{k} {n}" for k, n in sorted(found.checks.items())) or "nothing"
    summary = Note(
        None,
        f"witness {where}: {found.changes} changes, {found.execs} executions; "
        f"checked {checked}" + ("" if found.ok else f"; {len(found.violations)} violation(s)"),
    )
    notes = tuple(Note(None, f"witness: not observed: {u}") for u in found.unobserved)
    # What the witness put to the test counts as checked (AUTH-1, RETRY-1, TRACE-3).
    checks = dict(report.checks)
    for inv, n in found.checks.items():
        checks[inv] = checks.get(inv, 0) + n
    return attrs.evolve(
        result,
        report=attrs.evolve(
            report,
            violations=(*report.violations, *violations),
            notes=(*report.notes, summary, *notes),
            checks=checks,
        ),
    )
