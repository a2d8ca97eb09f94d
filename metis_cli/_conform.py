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
@click.option(
    "--witness",
    "witness",
    type=click.Path(path_type=Path),
    help="The run's witness file (default: <trace>.witness when it exists).",
)
def conform(files: tuple[Path, ...], fmt: str, as_json: bool, witness: Path | None) -> None:
    """Check trace files (or other runtimes' transcripts) against the model.

    A directory is a run of a tree of agents: every trace.jsonl below it is
    checked, and the tree as a whole (CHILD invariants across it). The run's
    witness file, when there is one, is checked against its traces
    (specs/witness.md). Exit 0 when everything conforms, 1 on a violation,
    2 on a malformed file.
    """
    from ._transcripts import check_transcript_file
    from ._witnessed import print_witness_report, witness_report

    if witness is not None and (fmt != "trace" or len(files) != 1):
        bad_input("--witness goes with one trace or run folder")

    def one(path: Path) -> tuple[Report, Any]:
        if fmt != "trace":
            return check_transcript_file(path, fmt), None
        report = check_tree_dir(path)[1] if path.is_dir() else _read_trace(path)
        return report, witness_report(path, witness)

    results = [one(p) for p in files]
    if as_json:
        out = []
        for r, w in results:
            j = r.to_json()
            if w is not None:
                j["witness"] = w.to_json()
            out.append(j)
        emit_json(out if len(out) > 1 else out[0])
    else:
        for r, w in results:
            _print_report(r)
            if w is not None:
                print_witness_report(w)
    ok = all(r.ok and (w is None or w.ok) for r, w in results)
    sys.exit(EXIT_OK if ok else EXIT_VIOLATION)
