"""`metis conform`: check traces, or other runtimes' transcripts, against the model."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import attrs
import click

from metis_check import STATUSES
from metis_check import Report

from ._inputs import BadInput
from ._output import bad_input
from ._output import count_option
from ._output import read_trace_file
from ._transcripts import FORMATS
from ._transcripts import FileResult
from ._transcripts import Run
from ._transcripts import Unit
from ._transcripts import check_unit
from ._transcripts import expand

if TYPE_CHECKING:
    from ._sarif import SarifOptions

OUTPUTS = ("text", "json", "sarif", "junit", "github")


def check_tree_dir(run_dir: Path) -> tuple[dict[str, Any], Report]:
    """Every `trace.jsonl` under `run_dir`, checked as one tree of agents."""
    from metis_check import check_trace_tree

    traces = {}
    for path in sorted(run_dir.rglob("trace.jsonl")):
        header, events, _ = read_trace_file(path)
        traces[str(path.relative_to(run_dir))] = (header, events)
    if not traces:
        bad_input(f"{run_dir}: no trace.jsonl below it")
    return traces, check_trace_tree(traces, source=str(run_dir))


def _targets(outputs: tuple[str, ...], as_json: bool) -> list[tuple[str, str | None]]:
    """`--output KIND[=PATH]` into (kind, path or None for standard output)."""
    targets: list[tuple[str, str | None]] = []
    for spec in outputs:
        kind, _, path = spec.partition("=")
        if kind not in OUTPUTS:
            bad_input(f"--output {spec!r}: expected one of {', '.join(OUTPUTS)}, optionally =PATH")
        if _ and not path:
            bad_input(f"--output {spec!r}: empty path after '='")
        targets.append((kind, path or None))
    if as_json:
        targets.append(("json", None))
    if not any(path is None for _, path in targets):
        targets.append(("text", None))  # something always goes to the terminal
    if sum(path is None for _, path in targets) > 1:
        bad_input("--output: only one output may go to standard output; give the others =PATH")
    return targets


def _write_file(path: str, text: str) -> None:
    """Write a report where the user said (a partly written one never replaces a good one)."""
    from ._params import write_named

    write_named(Path(path), (text + "\n").encode(), "--output")


def _sarif_options(root: Path | None, category: str | None) -> SarifOptions:
    """`--sarif-root` (an existing folder) and `--sarif-category` (not empty)."""
    from ._sarif import SarifOptions

    if root is not None and not root.is_dir():
        bad_input(f"--sarif-root {root}: not a folder")
    if category is not None and not category.strip("/ "):
        bad_input(f"--sarif-category {category!r}: empty")
    return SarifOptions(root=root, category=category)


_GIVEN = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


def run_units(units: list[Unit], fmt: str, jobs: int) -> list[FileResult]:
    """Check units in this process, or in a pool of `jobs` processes (order kept)."""
    if jobs <= 1 or len(units) <= 1:
        return [check_unit(u, fmt) for u in units]
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    with ProcessPoolExecutor(max_workers=min(jobs, len(units))) as pool:
        chunk = max(1, len(units) // (jobs * 8))
        return list(pool.map(partial(check_unit, fmt=fmt), units, chunksize=chunk))


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="trace",
    show_default=True,
    help="A metis trace, a transcript of another runtime, or auto (detect, and say which).",
)
@click.option(
    "--output",
    "outputs",
    multiple=True,
    metavar="KIND[=PATH]",
    help=f"Report as {'|'.join(OUTPUTS)} (default text), to standard output or to PATH. "
    "Repeat for several, e.g. --output sarif=metis.sarif --output github.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --output json.")
@click.option(
    "--sarif-root",
    type=click.Path(file_okay=False, dir_okay=True, path_type=Path),
    metavar="DIR",
    help="SARIF: the folder artifact URIs are relative to (SRCROOT); default: the git "
    "repository root of the files checked.",
)
@click.option(
    "--sarif-category",
    metavar="NAME",
    help="SARIF: automationDetails.id, the code scanning category (default: none, so "
    "the upload action's `category` applies).",
)
@click.option(
    "--allow",
    "allowed",
    multiple=True,
    type=click.Choice(STATUSES),
    help="Pass a check the input cannot decide: open-at-end (a live or cut session), "
    "outside-slice (a file that starts mid-session).",
)
@count_option("--jobs", 0, 4096, 1, "Worker processes for many files (0: one per core).")
@click.option(
    "--engine",
    type=click.Choice(("local", "dask")),
    default="local",
    show_default=True,
    help="Run the checks here (--jobs), or on a Dask distributed cluster.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="The Dask scheduler, e.g. tcp://host:8786 (default: a local cluster of --jobs "
    "worker processes, started for this check and stopped after it).",
)
@click.option(
    "--witness",
    "witness",
    type=click.Path(path_type=Path),
    help="The run's witness file (default: <trace>.witness, when it exists).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Transcripts: also the rules strict providers of the wire hold where its own "
    "provider is laxer (OAR-6: nothing between a Responses call and its output).",
)
@click.option(
    "--canaries",
    metavar="FILE",
    help="Values a workload planted (a JSON list, or one per line): each run's files "
    "are searched for them too (TRACE-2).",
)
@click.option(
    "--progress",
    metavar="FILE",
    multiple=True,
    help="A capture of a run's progress output (its stderr): scanned for credentials.",
)
@click.option(
    "--draw",
    "draw_dir",
    metavar="DIR",
    help="Write a drawing (SVG) of every violation into DIR: the violating event "
    "highlighted with the slice that explains it (as `metis draw`).",
)
@click.option(
    "--report",
    "report_path",
    metavar="FILE.html",
    help="Write one self-contained HTML report (no network resources): a summary per "
    "invariant, each violation with its drawing, and the coverage table.",
)
@click.option(
    "--coverage",
    "with_coverage",
    is_flag=True,
    help="Also report, per invariant ID and model transition, how often the inputs "
    "exercised it, and what they never reached.",
)
def conform(
    files: tuple[str, ...],
    fmt: str,
    outputs: tuple[str, ...],
    as_json: bool,
    sarif_root: Path | None,
    sarif_category: str | None,
    allowed: tuple[str, ...],
    jobs: int,
    engine: str,
    scheduler: str | None,
    witness: Path | None,
    strict: bool,
    canaries: str | None,
    progress: tuple[str, ...],
    draw_dir: str | None,
    report_path: str | None,
    with_coverage: bool,
) -> None:
    """Check traces (or other runtimes' transcripts) against the model.

    FILES are files, directories or globs; `-` reads standard input. With
    --format trace a directory is a run of a tree of agents (every trace.jsonl
    below it, and CHILD invariants across them), and a plan turn log (or a
    folder of them, like .metis/plan/turns) is checked against the plan model
    (PLAN invariants) with its segments' traces; otherwise every *.jsonl and
    *.json below it is a transcript, and a Claude Code session brings its
    sub-agents' files along. A trace's run (its journal, its agent tree's
    files, offloads) is scanned for credentials (TRACE-2). A transcript's
    verdict is conforms, violates or undetermined. A trace's witness file
    (`<trace>.witness`, or --witness) is checked against the run's traces
    (specs/witness.md): what it shows that no admitted effect explains is a
    violation, what it could not observe a warning. Exit 0 when everything
    conforms (or is undetermined only in allowed ways), 1 otherwise, 2 when
    an input cannot be read. --draw DIR and --report FILE.html draw every
    violation (specs/drawing.md).
    """
    from ._reports import errors
    from ._reports import write_all
    from ._witnessed import with_witness

    targets = _targets(outputs, as_json)
    sarif = _sarif_options(sarif_root, sarif_category)
    if draw_dir is not None:
        from ._params import writable_dir

        writable_dir(Path(draw_dir), "--draw")
    if scheduler and click.get_current_context().get_parameter_source("jobs") in _GIVEN:
        # The cluster's workers are what it has: metis does not resize it.
        bad_input("--jobs is for the local engine or a local Dask cluster, not with --scheduler")
    if scheduler and engine != "dask":
        bad_input("--scheduler is for --engine dask")
    if files.count("-") > 1:
        bad_input("'-' (standard input) may be given once")
    from ._run_files import coverage_table
    from ._run_files import log_reports
    from ._run_files import read_canaries
    from ._run_files import scan_files

    try:
        units = expand(files, fmt)
        planted = tuple(read_canaries(Path(canaries))) if canaries else ()
        scanned = scan_files([Path(p) for p in progress], planted, "progress output")
    except BadInput as exc:
        bad_input(str(exc))
    units = [attrs.evolve(u, canaries=planted, strict=strict) for u in units]
    if witness is not None and (fmt not in ("trace", "auto") or len(units) != 1):
        bad_input("--witness goes with one trace or run folder")
    if engine == "dask":
        from ._dask import run_on_dask

        results = run_on_dask(units, fmt, scheduler, jobs or os.cpu_count() or 1)
    else:
        results = run_units(units, fmt, jobs or os.cpu_count() or 1)
    results = [with_witness(r, u, witness) for r, u in zip(results, units, strict=True)]
    if progress:
        results.append(FileResult("progress output", scanned))
    checked = [r.report for r in results if r.report is not None]
    log_reports(checked)
    run = Run(tuple(results), frozenset(allowed))
    for message in errors(run):
        click.echo(f"metis: error: {message}", err=True)
    texts = write_all(run, targets, sarif)
    if draw_dir is not None or report_path is not None:
        from ._drawings import write_drawings

        write_drawings(run, units, fmt, draw_dir, report_path)
    for kind, path in targets:
        if path is None:
            if texts[kind]:
                click.echo(texts[kind])
        else:
            _write_file(path, texts[kind])
    if with_coverage:
        # After the text report; on standard error when another format holds stdout.
        text_out = ("text", None) in targets
        click.echo(coverage_table(checked), err=not text_out)
    sys.exit(run.exit_code)
