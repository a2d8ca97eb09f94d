"""Figures with matplotlib on the headless Agg backend, saved as PNG and SVG.

Figures are built on `matplotlib.figure.Figure` directly (no pyplot, so no
global state and no display). Every data mark (a bar, a point, a cell) gets
an SVG id `mark-<n>`, so a test can count the marks in the SVG file and
compare them with the data; `png_colours` tells a blank PNG from a drawn one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    import matplotlib
except ModuleNotFoundError as exc:  # the `studies` extra
    raise ModuleNotFoundError(
        "metis studies draw with matplotlib: pip install 'metis[studies]'", name="matplotlib"
    ) from exc

matplotlib.use("Agg")  # before anything imports a backend

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

SVG_HASH = "metis"  # fixed ids inside the SVG, so a regenerated file diffs cleanly
_MARK = re.compile(rb'<g id="mark-\d+"')


def new_figure(width: float = 6.4, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


class Marks:
    """Numbers the data marks of one figure (`mark-0`, `mark-1`, ...)."""

    def __init__(self) -> None:
        self.count = 0

    def tag(self, artist: Any) -> Any:
        artist.set_gid(f"mark-{self.count}")
        self.count += 1
        return artist

    def tag_all(self, artists: Sequence[Any]) -> None:
        for a in artists:
            self.tag(a)


def cell(
    ax: Axes, marks: Marks, x: float, y: float, colour: str, text: str = "", **kw: Any
) -> None:
    """One unit cell of a grid (a heatmap or a map), centred at (x, y)."""
    marks.tag(ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=colour, **kw)))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=8)


def save(fig: Figure, stem: Path) -> list[Path]:
    """`stem.png` and `stem.svg`; the SVG carries no date, so it is reproducible."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    fig.savefig(png, dpi=110)
    with matplotlib.rc_context({"svg.hashsalt": SVG_HASH}):
        fig.savefig(svg, metadata={"Date": None})
    return [png, svg]


def svg_marks(path: Path) -> int:
    """How many data marks an SVG file written by `save` holds."""
    return len(_MARK.findall(path.read_bytes()))


def png_colours(path: Path) -> int:
    """How many distinct colours a PNG holds (1: a blank picture)."""
    import matplotlib.image
    import numpy

    pixels = matplotlib.image.imread(str(path))
    flat = pixels.reshape(-1, pixels.shape[-1])
    return len(numpy.unique(flat, axis=0))
