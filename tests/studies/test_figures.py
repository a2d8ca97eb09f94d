"""The figures (`metis_studies._plots`, `metis_studies.report`): written as
PNG and SVG, one SVG mark per datum, and never a blank picture."""

from __future__ import annotations

from pathlib import Path

from metis_studies._plots import Marks
from metis_studies._plots import new_figure
from metis_studies._plots import png_colours
from metis_studies._plots import save
from metis_studies._plots import svg_marks
from metis_studies._stats import Pair
from metis_studies._stats import stats_of_pairs
from metis_studies.dispatch import BatchResult
from metis_studies.dispatch import Bounds
from metis_studies.dispatch import DispatchStudy
from metis_studies.permission_modes import MAP_RULES
from metis_studies.permission_modes import decision_map
from metis_studies.report import decision_maps_figure
from metis_studies.report import differences_figure
from metis_studies.report import histograms_figure


def test_a_blank_figure_is_told_from_a_drawn_one(tmp_path: Path) -> None:
    blank = save(new_figure(), tmp_path / "blank")
    assert png_colours(blank[0]) == 1 and svg_marks(blank[1]) == 0
    fig = new_figure()
    ax = fig.add_subplot()
    marks = Marks()
    marks.tag_all(list(ax.bar(["a", "b", "c"], [1, 2, 3])))
    png, svg = save(fig, tmp_path / "bars")
    assert svg_marks(svg) == 3
    assert png_colours(png) > 10


def test_the_svg_is_reproducible(tmp_path: Path) -> None:
    maps = (decision_map("no rule"),)
    first = decision_maps_figure(maps, tmp_path / "a")[1].read_bytes()
    again = decision_maps_figure(maps, tmp_path / "b")[1].read_bytes()
    assert first == again


def test_decision_maps_have_a_mark_per_mode_and_fact(tmp_path: Path) -> None:
    maps = tuple(decision_map(name) for name in MAP_RULES)
    png, svg = decision_maps_figure(maps, tmp_path / "maps")
    cells = sum(len(m.modes) * len(m.columns) for m in maps)
    assert cells == 4 * 5 * 32
    assert svg_marks(svg) == cells
    assert png_colours(png) > 3  # allow, ask and deny at least


def _study(batches: dict[str, list[tuple[float, float]]]) -> DispatchStudy:
    out = []
    for name, spans in batches.items():
        pairs = tuple(Pair(k, a, b, "a" if k % 2 == 0 else "b") for k, (a, b) in enumerate(spans))
        bounds = Bounds(10.0, 8.0, "bash: sleep", 10.0, 2.0, 30.0, 2)
        stats = stats_of_pairs(pairs, ("four-class", "serial"))
        out.append(BatchResult(name, ("bash: sleep",), pairs, stats, (10.0,), bounds))
    return DispatchStudy(tuple(out))


def test_paired_differences_have_a_mark_per_pair(tmp_path: Path) -> None:
    study = _study(
        {"cpu": [(0.014, 0.026), (0.015, 0.025), (0.020, 0.019)], "io": [(0.1, 0.4)] * 5}
    )
    png, svg = differences_figure(study, tmp_path / "diffs")
    assert svg_marks(svg) == 8
    assert png_colours(png) > 10


def test_histograms_have_a_mark_per_filled_bin(tmp_path: Path) -> None:
    study = _study({"io": [(0.10, 0.40), (0.11, 0.41), (0.30, 0.42)]})
    _, svg = histograms_figure(study, tmp_path / "hist")
    # 16 bins from 100 to 420 ms: four-class fills 2 (100-110 and 300), serial 1.
    assert svg_marks(svg) == 3
