"""`metis study NAME... --out DIR`: run research studies (`metis_studies`) and
write their tables, raw samples and figures.

Each study writes into `DIR/NAME/`: its results as JSON, its tables as CSV
and Markdown, raw timing samples as CSV and JSON, and each figure as PNG and
SVG (matplotlib, Agg backend). `all` runs every study. Exit 0 when every
study's expectations held, 1 otherwise (a fault row, an oracle mismatch, a
child-boundary cell off its expectation...), 2 for bad usage. A timing target
missed is reported, not an exit status.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import bad_input
from ._output import emit_json

NAMES = (
    "faults",
    "oracle",
    "child-boundary",
    "dispatch",
    "permission-modes",
    "model-ablations",
    "coverage",
    "snapshot",
    "read-marker",
)


@click.command("study")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the results (one subfolder per study).",
)
@click.option("--quick", is_flag=True, help="Small sizes (a smoke run), not the paper's.")
@click.option("--pairs", type=click.IntRange(2, 10_000), help="Dispatch: matched pairs (30).")
@click.option("--seeds", type=click.IntRange(1, 100), help="Child boundary: seeds per cell (5).")
@click.option("--examples", type=click.IntRange(1, 100_000), help="Oracle: examples per route.")
@click.option("--runs", type=click.IntRange(1, 100_000), help="Coverage: simulated runs (200).")
@click.option("--trials", type=click.IntRange(1, 100), help="Read-marker: trials per condition.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def study(
    names: tuple[str, ...],
    out: Path,
    quick: bool,
    pairs: int | None,
    seeds: int | None,
    examples: int | None,
    runs: int | None,
    trials: int | None,
    as_json: bool,
) -> None:
    """Run studies (NAME: faults, oracle, child-boundary, dispatch,
    permission-modes, model-ablations, coverage, snapshot, read-marker, or all)."""
    chosen = list(NAMES) if "all" in names else list(dict.fromkeys(names))
    for name in chosen:
        if name not in NAMES:
            bad_input(f"NAME: unknown study {name!r} (valid: {', '.join(NAMES)}, all)")
    if out.exists() and not out.is_dir():
        bad_input(f"--out: {out} is not a folder")
    from metis_studies.report import Sizes
    from metis_studies.report import write_study

    base = Sizes.quick() if quick else Sizes()
    sizes = Sizes(
        pairs=pairs or base.pairs,
        seeds=seeds or base.seeds,
        examples=examples or base.examples,
        runs=runs or base.runs,
        trials=trials or base.trials,
        ablations=base.ablations,
    )
    written = []
    for name in chosen:
        if not as_json:
            click.echo(f"== {name} ...", err=True)
        w = write_study(name, out, sizes)
        written.append(w)
        if not as_json:
            click.echo(f"{name}: {'ok' if w.ok else 'FAIL'}: {w.summary}")
            click.echo(f"  {len(w.files)} files in {out / name}")
    ok = all(w.ok for w in written)
    if as_json:
        emit_json(
            {
                "ok": ok,
                "studies": [
                    {
                        "study": w.study,
                        "ok": w.ok,
                        "summary": w.summary,
                        "files": [str(f) for f in w.files],
                    }
                    for w in written
                ],
            }
        )
    sys.exit(EXIT_OK if ok else EXIT_VIOLATION)
