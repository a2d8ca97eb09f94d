"""`metis faults`: the fault matrix (`metis_studies.faults`), as a table or JSON.

Exit 0 when every row holds, 1 otherwise.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import click

from metis_studies import faults as study
from metis_studies.faults import DISPATCHERS
from metis_studies.faults import FaultRow

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import emit_json
from ._output import table

HEADERS = (
    "case",
    "expected closure",
    "expected effects",
    "observed closure",
    "observed effects",
    "trace conforms",
    "holds",
)


def matrix_table(rows: Sequence[FaultRow]) -> str:
    return table(
        HEADERS,
        [
            (
                r.case,
                r.expected_closure,
                r.expected_effects,
                r.observed_closure,
                r.observed_effects,
                "yes" if r.trace_conforms else "NO",
                "yes" if r.holds else "NO",
            )
            for r in rows
        ],
    )


@click.command("faults")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep every row's workspace and trace here (default: a temporary directory).",
)
@click.option(
    "--dispatcher",
    type=click.Choice(tuple(DISPATCHERS)),
    default="serial",
    show_default=True,
    help="The loop's dispatcher.",
)
def faults(as_json: bool, workdir: Path | None, dispatcher: str) -> None:
    """Run the fault matrix against the real runtime; exit 1 if a row fails."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="metis-f-")))
        rows = study.run_fault_matrix(workdir, dispatcher)
    if as_json:
        emit_json([r.to_json() for r in rows])
    else:
        click.echo(matrix_table(rows))
        for r in rows:
            if not r.holds and r.note:
                click.echo(f"{r.case}: {r.note}")
        held = sum(r.holds for r in rows)
        click.echo(f"{held}/{len(rows)} rows hold")
    sys.exit(EXIT_OK if all(r.holds for r in rows) else EXIT_VIOLATION)
