"""`metis conform`: check traces, or other runtimes' transcripts, against the model."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
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
        scanned = report.checks.get("TRACE-2", 0)
        files = f", {scanned} files free of credentials" if scanned else ""
        click.echo(f"{report.source}: conforms ({report.events} events{files})")
        return
    v = report.first
    assert v is not None
    where = f"line {v.line}" if v.line is not None else f"event {v.index}"
    click.echo(f"{report.source}: {where}: {v.invariant} violated")
    click.echo(f"  invariant: {BY_ID[v.invariant].statement}" if v.invariant in BY_ID else "")
    click.echo(f"  what:      {v.message}")
    click.echo(f"  state:     {v.state}")
    click.echo(f"  slice:     events {list(v.slice)}")
    for more in report.violations[1:]:
        click.echo(f"  also:      {more.one_line()}")


# --- TRACE-2: the files a run writes ----------------------------------------------

# Below a run directory, where its agents work: their files are the work, not the run's.
_WORKSPACES = "worktrees"


def run_files(path: Path) -> list[Path]:
    """The files a run wrote (TRACE-2). For a run directory: every regular
    file below it but its agents' workspaces (`worktrees/`). For a trace: the
    trace, its journal and witness file, and its agent tree (`guard.json`,
    `agents/`, `offload/`, in the trace's folder for a `trace.jsonl`, else in
    `<trace>.agents/`), as `metis run` lays them out."""
    if path.is_dir():
        found = [p for p in path.rglob("*") if _WORKSPACES not in p.relative_to(path).parts]
    else:
        found = [
            path,
            path.with_name(path.name + ".journal"),
            path.with_name(path.name + ".witness"),
        ]
        tree = path.parent if path.name == "trace.jsonl" else path.with_name(path.name + ".agents")
        for part in ("guard.json", "agents", "offload"):
            below = tree / part
            found += [below, *below.rglob("*")] if below.is_dir() else [below]
    return sorted({p for p in found if p.is_file() and not p.is_symlink()})


def read_canaries(path: Path) -> list[str]:
    """Values a workload planted: a JSON list of strings, or one per line."""
    from metis_model.trace import InputError, decode_json
    from metis_runtime._input import input_lines, read_input_text

    try:
        text = read_input_text(path)
        if text.lstrip().startswith("["):
            values = decode_json(text, source=str(path))
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                bad_input(f"{path}: the canaries must be a JSON list of strings")
            return [v for v in values if v]
        return [line for line in input_lines(text) if line]
    except InputError as exc:
        bad_input(exc.describe(str(path)))


def scan_files(paths: Sequence[Path], canaries: Sequence[str], source: str) -> Report:
    """TRACE-2 over files, read bounded; bytes that are not UTF-8 are replaced
    (every credential family is ASCII)."""
    from metis_model import check_run_files
    from metis_model.trace import InputError
    from metis_runtime._input import read_input_bytes

    def texts() -> Iterator[tuple[str, str]]:
        for p in paths:
            try:
                data = read_input_bytes(p)
            except InputError as exc:
                bad_input(exc.describe(str(p)))
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
    "--canaries",
    type=click.Path(path_type=Path),
    help="Values the workload planted (a JSON list, or one per line): TRACE-2 looks for each.",
)
@click.option(
    "--progress",
    type=click.Path(path_type=Path),
    multiple=True,
    help="A file holding a run's progress output (its stderr): scanned for credentials.",
)
def conform(
    files: tuple[Path, ...],
    fmt: str,
    as_json: bool,
    canaries: Path | None,
    progress: tuple[Path, ...],
) -> None:
    """Check trace files (or other runtimes' transcripts) against the model.

    A directory is a run of a tree of agents: every trace.jsonl below it is
    checked, and the tree as a whole (CHILD invariants across it). The files
    a run wrote (its trace, journal, children's files and offloads) are
    scanned for credentials (TRACE-2). Exit 0 when everything conforms, 1 on
    a violation, 2 on a malformed file.
    """
    from ._transcripts import check_transcript_file

    planted = read_canaries(canaries) if canaries is not None else []

    def one(path: Path) -> Report:
        if fmt != "trace":
            return check_transcript_file(path, fmt)
        report = check_tree_dir(path)[1] if path.is_dir() else _read_trace(path)
        return merged(report, scan_files(run_files(path), planted, str(path)))

    reports = [one(p) for p in files]
    if progress:
        reports.append(scan_files(list(progress), planted, "progress output"))
    if as_json:
        emit_json([r.to_json() for r in reports] if len(reports) > 1 else reports[0].to_json())
    else:
        for r in reports:
            _print_report(r)
    sys.exit(EXIT_OK if all(r.ok for r in reports) else EXIT_VIOLATION)
