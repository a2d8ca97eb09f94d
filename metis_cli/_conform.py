"""`metis conform`: check traces, or other runtimes' transcripts, against the model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from metis_model import BY_ID, Report

from ._output import EXIT_OK, EXIT_VIOLATION, bad_input, emit_json, read_trace_file


def _read_trace(path: Path) -> Report:
    from metis_model import check_trace

    header, events, line_of = read_trace_file(path)
    return check_trace(events, header, source=str(path), line_of=line_of)


def check_tree_dir(run_dir: Path) -> tuple[dict[str, Any], Report]:
    """Every `trace.jsonl` under `run_dir`, checked as one tree of agents."""
    from metis_model import check_trace_tree

    traces = {}
    for path in sorted(run_dir.rglob("trace.jsonl")):
        header, events, _ = read_trace_file(path)
        traces[str(path.relative_to(run_dir))] = (header, events)
    if not traces:
        bad_input(f"{run_dir}: no trace.jsonl below it")
    return traces, check_trace_tree(traces, source=str(run_dir))


def _print_report(report: Report) -> None:
    if report.ok:
        click.echo(f"{report.source}: conforms ({report.events} events)")
        return
    v = report.first
    assert v is not None
    where = f"line {v.line}" if v.line is not None else f"event {v.index}"
    click.echo(f"{report.source}: {where}: {v.invariant} violated")
    click.echo(f"  invariant: {BY_ID[v.invariant].statement}" if v.invariant in BY_ID else "")
    click.echo(f"  what:      {v.message}")
    click.echo(f"  state:     {v.state}")
    click.echo(f"  slice:     events {list(v.slice)}")


FORMATS = ("trace", "anthropic", "openai-chat", "openai-responses", "claude-code")


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="trace",
    show_default=True,
    help="A metis trace, or a transcript of another runtime.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
def conform(files: tuple[Path, ...], fmt: str, as_json: bool) -> None:
    """Check trace files (or other runtimes' transcripts) against the model.

    A directory is a run of a tree of agents: every trace.jsonl below it is
    checked, and the tree as a whole (CHILD invariants across it). A plan
    turn log (or a folder of them, like .metis/plan/turns) is checked against
    the plan model (PLAN invariants), with its segments' traces. Exit 0
    when everything conforms, 1 on a violation, 2 on a malformed file.
    """
    from ._transcripts import check_transcript_file

    def one(path: Path) -> Report:
        if fmt != "trace":
            return check_transcript_file(path, fmt)
        # Only a metis trace or turn log needs the schema (pydantic).
        from ._plan_conform import check_turn_dir, check_turn_log_file, is_turn_log, turn_logs_in

        if path.is_dir():
            turns = turn_logs_in(path)  # a folder of plan turn logs (specs/plan.md)
            return check_turn_dir(path, turns) if turns else check_tree_dir(path)[1]
        return check_turn_log_file(path) if is_turn_log(path) else _read_trace(path)

    reports = [one(p) for p in files]
    if as_json:
        emit_json([r.to_json() for r in reports] if len(reports) > 1 else reports[0].to_json())
    else:
        for r in reports:
            _print_report(r)
    sys.exit(EXIT_OK if all(r.ok for r in reports) else EXIT_VIOLATION)
