"""`metis explore`: model-driven workloads against the real runtime.

A thin layer over `metis_studies.explore`: options, progress on stderr, the
situations reached, throughput, and the files written for a divergence.
Exit 0 when nothing diverged, 1 when a divergence was found (and shrunk),
2 on bad input.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import click

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import bad_input
from ._output import emit_json
from ._output import table

if TYPE_CHECKING:
    from metis_studies.explore import Workload


def _positive(name: str, value: float | None, *, integer: bool = False) -> None:
    if value is not None and not value > 0:
        bad_input(f"{name} {value:g}: must be {'a positive integer' if integer else 'positive'}")


class _OneLine(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            bad_input(" ".join(exc.format_message().split()))


def _situation_rows(counts: dict[str, int], required: tuple[str, ...]) -> list[tuple[str, str]]:
    rows = [(name, str(counts.get(name, 0)) if counts.get(name) else "NEVER") for name in required]
    others = sorted(k for k in counts if k not in required)
    rows += [(name, str(counts[name])) for name in others]
    return rows


def _coverage_rows(rows: list[Any]) -> list[tuple[str, str, str]]:
    out = []
    for r in rows:
        shown = f"{len(r.reached)}/{len(r.reached) + len(r.missed)}" if r.ok else "NONE"
        missed = ", ".join(r.missed[:3]) + (f" (+{len(r.missed) - 3})" if len(r.missed) > 3 else "")
        out.append((r.package, shown, missed or "-"))
    return out


def _replay(path: Path, out: Path, execution: str, as_json: bool) -> None:
    from metis_studies.explore import WorkloadError
    from metis_studies.explore import check_outcome
    from metis_studies.explore import execute
    from metis_studies.explore import read_workload

    try:
        if str(path) == "-":
            workload = _stdin_workload()
        elif not path.exists():
            bad_input(f"--replay {path}: no such file")
        else:
            workload = read_workload(path)
    except WorkloadError as exc:
        bad_input(f"--replay {exc}")
    verdict = check_outcome(execute(workload, out / "replay", execution))  # type: ignore[arg-type]
    if as_json:
        emit_json(
            {
                "workload": workload.name,
                "steps": list(verdict.outcome.steps),
                "findings": [f.one_line() for f in verdict.findings],
                "events": verdict.events,
            }
        )
    else:
        for step in verdict.outcome.steps:
            click.echo(f"ran: {step}")
        for f in verdict.findings:
            click.echo(f.one_line())
        if verdict.ok:
            click.echo(f"{workload.name}: conforms ({verdict.events} events)")
    sys.exit(EXIT_OK if verdict.ok else EXIT_VIOLATION)


def _stdin_workload() -> Workload:
    """`--replay -`: the workload on standard input (bounded, strict UTF-8),
    JSON when it starts with `{`, else a scenario YAML with an `explore:`
    section; parsed in memory (a workload's planted credentials reach no file)."""
    from metis_runtime._input import decode_text
    from metis_runtime._input import read_input_bytes
    from metis_studies.explore import parse_workload
    from metis_trace import InputError

    try:
        text = decode_text(read_input_bytes("-"), "-")
    except InputError as exc:
        bad_input(f"--replay {exc}")
    return parse_workload(text, "-", scenario=text.lstrip()[:1] != "{")


@click.command("explore", cls=_OneLine)
@click.option("--runs", type=int, help="Stop after N workloads (default: the budget decides).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generator.")
@click.option(
    "--budget",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds of generation; shrinking a divergence gets half as much again.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("explore-out"),
    show_default=True,
    help="Folder for a divergence's scenario, regression test and counterexample files.",
)
@click.option(
    "--execution",
    "executions",
    multiple=True,
    type=click.Choice(("in-process", "metis-run", "process")),
    help="How workloads run (repeatable; default: all three).",
)
@click.option(
    "--replay",
    "replay",
    type=click.Path(path_type=Path),
    help="Run one workload file (`-`: standard input).",
)
@click.option("--keep-runs", is_flag=True, help="Keep every run's folder under OUT/runs.")
@click.option(
    "--whole-sweep",
    is_flag=True,
    help="Run every situation of the sweep even past the budget (which then bounds the rest).",
)
@click.option(
    "--coverage",
    is_flag=True,
    help="Report, per runtime package, which of its situations the sweep reached; "
    "exit 1 when a package reached none.",
)
@click.option(
    "--sweep-only",
    "only",
    multiple=True,
    metavar="PREFIX",
    help="Run only the sweep's situations starting with PREFIX (repeatable), and draw nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def explore(
    runs: int | None,
    seed: int,
    budget: float,
    out_dir: Path,
    executions: tuple[str, ...],
    replay: Path | None,
    keep_runs: bool,
    whole_sweep: bool,
    coverage: bool,
    only: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run model-driven workloads through the real runtime and check every trace.

    Workloads are drawn (Hypothesis, seeded) to reach every situation the
    model checks: Queue chains, Exclusive barriers, asks on every route,
    the context ladder, SIGKILL at every journal point then resume, hooks,
    plan-mode children, planted credentials, background jobs, and runs of
    the model turned into scripts; then each mechanism's own workloads: the
    settings hierarchy, agent definitions, containment, encoded credentials,
    exit records, detached jobs, MCP servers, the Claude Code hook and the
    plan path. A divergence is shrunk and written to
    OUT: a replay scenario, a pytest regression and the counterexample
    files. Exit 0 nothing diverged, 1 a divergence, 2 bad input.
    """
    _positive("--runs", runs, integer=True)
    _positive("--budget", budget)
    if seed < 0:
        bad_input(f"--seed {seed}: must be 0 or more")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        bad_input(f"--out {out_dir}: cannot create: {exc.strerror or exc}")
    chosen = tuple(executions) or ("in-process", "metis-run", "process")
    if replay is not None:
        _replay(replay, out_dir, chosen[0], as_json)

    from metis_studies.explore import MECH_REQUIRED
    from metis_studies.explore import REQUIRED
    from metis_studies.explore import explore as run_explore
    from metis_studies.explore import package_coverage
    from metis_studies.explore import write_divergence

    work = Path(tempfile.mkdtemp(prefix="runs-", dir=out_dir))
    say = (lambda text: None) if as_json else (lambda text: click.echo(text, err=True))
    try:
        result = run_explore(
            work,
            runs=runs,
            seed=seed,
            budget=budget,
            executions=chosen,  # type: ignore[arg-type]
            keep_runs=keep_runs,
            progress=say,
            whole_sweep=whole_sweep,
            only=only,
        )
        written: list[Path] = []
        if result.divergence is not None:
            written = write_divergence(result.divergence, out_dir / "divergence")
    finally:
        if not keep_runs:
            shutil.rmtree(work, ignore_errors=True)
    stats = result.stats
    minutes = max(result.seconds, 1e-9) / 60
    summary: dict[str, Any] = {
        "seed": seed,
        "workloads": stats.runs,
        "shrink_runs": stats.shrink_runs,
        "events": stats.events,
        "seconds": round(result.seconds, 2),
        "workloads_per_minute": round(stats.runs / minutes, 1),
        "events_per_second": round(stats.events / max(stats.seconds, 1e-9), 1),
        "executions": dict(stats.executions),
        "situations": dict(sorted(stats.situations.items())),
        "never": [s for s in (*REQUIRED, *MECH_REQUIRED) if not stats.situations.get(s)],
    }
    rows = package_coverage(stats.situations)
    uncovered = [r.package for r in rows if not r.ok]
    if coverage:
        summary["coverage"] = {
            r.package: {"reached": list(r.reached), "missed": list(r.missed)} for r in rows
        }
        summary["uncovered"] = uncovered
    d = result.divergence
    if d is not None:
        summary["divergence"] = {
            "finding": d.finding.one_line(),
            "invariant": d.finding.invariant,
            "calls": len(d.workload.calls),
            "calls_before_shrinking": len(d.first.calls),
            "flaky": d.flaky,
            "files": [str(p) for p in written],
        }
    if as_json:
        emit_json(summary)
    else:
        required = (*REQUIRED, *MECH_REQUIRED)
        click.echo(
            table(["situation", "reached"], _situation_rows(dict(stats.situations), required))
        )
        if coverage:
            click.echo(table(["package", "reached", "missed"], _coverage_rows(rows)))
        how = ", ".join(f"{k} {v}" for k, v in stats.executions.items())
        click.echo(
            f"{stats.runs} workloads ({how}),"
            f" {stats.events} events checked, {result.seconds:.1f}s:"
            f" {summary['workloads_per_minute']} workloads/min,"
            f" {summary['events_per_second']} events/s"
        )
        if d is None:
            click.echo("no divergence")
        else:
            click.echo(f"DIVERGENCE: {d.finding.one_line()}")
            click.echo(
                f"  shrunk from {len(d.first.calls)} to {len(d.workload.calls)} calls"
                f" in {stats.shrink_runs} runs{' (flaky: did not repeat)' if d.flaky else ''}"
            )
            for path in written:
                click.echo(f"  wrote {path}")
        if coverage and uncovered:
            click.echo(f"coverage: no situation reached in {', '.join(uncovered)}")
    failed = d is not None or (coverage and bool(uncovered))
    sys.exit(EXIT_VIOLATION if failed else EXIT_OK)
