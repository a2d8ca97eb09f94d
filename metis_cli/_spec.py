"""`metis spec` (the invariants and their IDs) and `metis check` (the evidence behind each)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from metis_model import INVARIANTS

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import bad_input
from ._output import count_option
from ._output import emit_json
from ._output import table
from ._params import widths_timeout_option

if TYPE_CHECKING:
    from ._evidence import EvidenceTable


@click.command()
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


def _evidence_table(ev: EvidenceTable) -> str:
    rows = []
    for inv in INVARIANTS:
        e = ev.rows[inv.id]
        broken = f"{e.caught}/{e.caught + e.missed}" if e.caught + e.missed else "-"
        rows.append((inv.id, e.traces, e.checks, broken, e.proof or "-", e.verdict))
    return table(["invariant", "traces", "checks", "broken caught", "proof", "verdict"], rows)


@click.command()
@count_option("--runs", 1, 100_000, 200, "Simulated model runs to record and check.")
@count_option("--broken", 1, 1000, 5, "Broken traces per invariant.")
@click.option(
    "--prove/--no-prove",
    "with_proofs",
    default=True,
    show_default=True,
    help="Run the z3 proofs and bounded model checks too.",
)
@count_option("--depth", 1, 200, 20, "BMC depth for the loop properties.")
@widths_timeout_option()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check(
    runs: int, broken: int, with_proofs: bool, depth: int, widths_timeout: float, as_json: bool
) -> None:
    """Report the evidence behind every invariant ID: proved, bounded to depth
    k, N simulated traces (and checks) in which it held, K broken traces caught."""
    from ._demo import bundled_transcripts
    from ._evidence import EvidenceTable
    from ._evidence import gather_model_evidence
    from ._evidence import gather_proof_evidence
    from ._evidence import gather_transcript_evidence

    ev = EvidenceTable()
    gather_model_evidence(ev, runs, broken)
    gather_transcript_evidence(ev, bundled_transcripts())
    if with_proofs:
        gather_proof_evidence(ev, depth, widths_timeout)
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
