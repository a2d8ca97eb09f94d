"""The witness file beside a trace, checked against the run's traces (`metis conform`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._output import bad_input, read_trace_file

if TYPE_CHECKING:
    from metis_model import WitnessReport
    from metis_model.trace import WitnessSession


def _root_trace(target: Path) -> Path:
    return target / "trace.jsonl" if target.is_dir() else target


def _tree_traces(root: Path) -> list[Path]:
    """The root trace, then every child agent's (they live in the tree's `agents/`)."""
    tree = root.parent if root.name == "trace.jsonl" else root.with_name(root.name + ".agents")
    return [root, *sorted((tree / "agents").glob("*/trace.jsonl"))]


def read_witness_file(path: Path) -> list[WitnessSession]:
    """A witness file's sessions; a malformed one is a one-line error, exit 2."""
    from metis_model.trace import InputError, read_witness
    from metis_runtime._input import input_lines, read_input_text

    try:
        return read_witness(input_lines(read_input_text(path)))
    except InputError as exc:
        bad_input(exc.describe(str(path)))


def witness_report(target: Path, witness: Path | None) -> WitnessReport | None:
    """Check the witness of the run at `target` (a trace or a run folder): the
    file given, else `<trace>.witness` when it exists, else None."""
    from metis_model import WitnessedTrace, check_witness

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


def print_witness_report(report: WitnessReport) -> None:
    checked = ", ".join(f"{k} {n}" for k, n in sorted(report.checks.items())) or "nothing"
    verdict = "agrees with the trace" if report.ok else "shows effects the trace does not admit"
    click.echo(
        f"{report.source}: witness {verdict} ({report.changes} changes, "
        f"{report.execs} executions; checked: {checked})"
    )
    for v in report.violations:
        click.echo(f"  {v.one_line()}")
    for note in report.unobserved:
        click.echo(f"  not observed: {note}")
