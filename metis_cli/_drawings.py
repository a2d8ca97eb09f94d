"""`metis conform --draw DIR` and `--report FILE.html`: every violation drawn.

Each input with a violation is read once more for drawing (`_draw.drawable`,
with the result `metis conform` already has, so the witness's and the run
files' findings are kept), and each of its violations is drawn on its own:
that violation's event highlighted with its slice. An input that cannot be
drawn (`dot` missing, failing or too slow) gets a one-line reason in the
report and on standard error, and the rest are still drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import click

from ._draw import DrawError
from ._draw import drawable
from ._draw import file_name
from ._draw import render
from ._html import Drawn
from ._html import inline_svg
from ._html import report_page
from ._inputs import BadInput
from ._transcripts import Run
from ._transcripts import Unit

# Inline SVG kept in the report (each is tens of kilobytes); --draw DIR has them all.
REPORT_DRAWINGS = 100


def draw_violations(run: Run, units: Sequence[Unit], fmt: str) -> list[Drawn]:
    """One drawing (SVG text) per violation of every input, in report order."""
    drawn: list[Drawn] = []
    for result, unit in zip(run.results, units, strict=False):
        violations = result.report.violations if result.report is not None else ()
        if not violations:
            continue
        try:
            picture = drawable(unit, fmt, result=result)
        except BadInput as exc:
            drawn += [Drawn(result.source, n, missing=str(exc)) for n in range(len(violations))]
            continue
        for n, v in enumerate(violations):
            try:
                svg = render(picture.figure([v]), "svg", id_prefix=f"d{len(drawn)}_").decode()
            except DrawError as exc:
                drawn.append(Drawn(result.source, n, missing=str(exc)))
                continue
            drawn.append(Drawn(result.source, n, svg=svg, invariant=v.invariant))
    return drawn


def write_drawings(
    run: Run, units: Sequence[Unit], fmt: str, draw_dir: str | None, report_path: str | None
) -> None:
    from ._params import StagedOutput
    from ._params import write_named

    drawn = draw_violations(run, units, fmt)
    for d in drawn:
        if d.missing:
            click.echo(f"metis: warning: {d.source}: not drawn: {d.missing}", err=True)
    if draw_dir is not None:
        out = StagedOutput(Path(draw_dir), "--draw")
        used: set[str] = set()
        with out as stage:
            for d in drawn:
                if d.missing:
                    continue
                name = file_name(d.source, d.number + 1, d.invariant)
                while name in used:
                    name += "_"
                used.add(name)
                (stage / f"{name}.svg").write_text(d.svg)
        click.echo(f"metis: drew {len(used)} violation(s) into {draw_dir}", err=True)
    if report_path is not None:
        inline = [
            attrs.evolve(d, svg=inline_svg(d.svg))
            if i < REPORT_DRAWINGS or d.missing
            else attrs.evolve(d, svg="", missing=_CAP)
            for i, d in enumerate(drawn)
        ]
        write_named(Path(report_path), report_page(run, inline).encode(), "--report")


_CAP = f"the report holds the first {REPORT_DRAWINGS} drawings; --draw DIR writes every one"
