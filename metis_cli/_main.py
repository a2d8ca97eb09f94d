"""The `metis` command line.

Exit codes, for every command: 0 everything holds, 1 a violation was found,
2 bad input or usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from metis_model import BY_ID, INVARIANTS, Report, check_trace

from ._agents import ablate, agents
from ._demo import bundled_transcripts, demo
from ._evidence import (
    EvidenceTable,
    gather_model_evidence,
    gather_proof_evidence,
    gather_transcript_evidence,
)
from ._faults import faults
from ._output import EXIT_OK, EXIT_VIOLATION, bad_input, emit_json, read_trace_file, table
from ._permissions import permissions
from ._prove import counterexample, prove
from ._run import run


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="metis", prog_name="metis")
def cli() -> None:
    """metis: check the invariants of tool-using agent runtimes.

    Exit codes: 0 everything holds, 1 a violation was found, 2 bad input or usage.
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--family", help="Only this family (AUTH, CLOSE, SCHED, PERM, CHILD, RETRY, ...).")
def spec(as_json: bool, family: str | None) -> None:
    """List the invariants with their IDs and statements."""
    chosen = [i for i in INVARIANTS if family is None or i.family == family.upper()]
    if not chosen:
        bad_input(f"--family {family!r}: no such family")
    if as_json:
        emit_json(
            [
                {
                    "id": i.id,
                    "family": i.family,
                    "statement": i.statement,
                    "spec": f"specs/{i.spec}",
                }
                for i in chosen
            ]
        )
        return
    click.echo(table(["ID", "statement", "spec"], [(i.id, i.statement, i.spec) for i in chosen]))


def _read_trace(path: Path) -> Report:
    header, events, line_of = read_trace_file(path)
    return check_trace(events, header, source=str(path), line_of=line_of)


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


@cli.command()
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
    from ._agents import check_tree_dir
    from ._plan_conform import check_turn_dir, check_turn_log_file, is_turn_log, turn_logs_in
    from ._transcripts import check_transcript_file

    def one(path: Path) -> Report:
        if fmt != "trace":
            return check_transcript_file(path, fmt)
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


def _evidence_table(ev: EvidenceTable) -> str:
    rows = []
    for inv in INVARIANTS:
        e = ev.rows[inv.id]
        broken = f"{e.caught}/{e.caught + e.missed}" if e.caught + e.missed else "-"
        rows.append((inv.id, e.traces, e.checks, broken, e.proof or "-", e.verdict))
    return table(["invariant", "traces", "checks", "broken caught", "proof", "verdict"], rows)


@cli.command()
@click.option(
    "--runs",
    type=click.IntRange(1, 100_000),
    default=200,
    show_default=True,
    help="Simulated model runs to record and check.",
)
@click.option(
    "--broken",
    type=click.IntRange(1, 1000),
    default=5,
    show_default=True,
    help="Broken traces per invariant.",
)
@click.option(
    "--prove/--no-prove",
    "with_proofs",
    default=True,
    show_default=True,
    help="Run the z3 proofs and bounded model checks too.",
)
@click.option(
    "--depth",
    type=click.IntRange(1, 200),
    default=20,
    show_default=True,
    help="BMC depth for the loop properties.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(runs: int, broken: int, with_proofs: bool, depth: int, as_json: bool) -> None:
    """Report the evidence behind every invariant ID: proved, bounded to depth
    k, N simulated traces (and checks) in which it held, K broken traces caught."""
    ev = EvidenceTable()
    gather_model_evidence(ev, runs, broken)
    gather_transcript_evidence(ev, bundled_transcripts())
    if with_proofs:
        gather_proof_evidence(ev, depth)
    _finish_evidence(ev, as_json)


def _finish_evidence(ev: EvidenceTable, as_json: bool) -> None:
    if as_json:
        emit_json(
            {
                "ok": ev.ok,
                "invariants": {k: v.to_json() for k, v in ev.rows.items()},
                "failures": ev.failures,
            }
        )
    else:
        click.echo(_evidence_table(ev))
        for failure in ev.failures:
            click.echo(f"does not conform: {failure}")
        click.echo("all invariants hold" if ev.ok else "SOME INVARIANTS FAIL")
    sys.exit(EXIT_OK if ev.ok else EXIT_VIOLATION)


cli.add_command(ablate)
cli.add_command(agents)
cli.add_command(counterexample)
cli.add_command(demo)
cli.add_command(faults)
cli.add_command(permissions)
cli.add_command(prove)
cli.add_command(run)


def main() -> None:
    """Run the CLI; a usage error is one line naming the command, exit 2."""
    try:
        code = cli.main(standalone_mode=False)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "metis"
        click.echo(f"{where}: error: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("metis: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"metis: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
