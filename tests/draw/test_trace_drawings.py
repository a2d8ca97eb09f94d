"""Drawings of runtime traces and counterexamples, read back from the SVG:
the nodes, the violating one and its slice with the facts its invariant
reads, the execution intervals and overlaps, the legend."""

from __future__ import annotations

import pytest

from metis_check import Figure
from metis_check import Item
from metis_check import check_trace
from metis_check import event_label
from metis_check import figure_graph
from metis_check import trace_figure
from metis_check import window
from metis_trace import Cancel
from metis_trace import CancelCause
from tests.draw._cases import cex
from tests.draw._svg import Picture
from tests.draw._svg import read_svg


def _draw(ablation: str) -> tuple[Picture, int]:
    header, events = cex(ablation)
    report = check_trace(events, header)
    figure = trace_figure(header, events, report.first, name=ablation)
    return read_svg(figure_graph(figure).pipe(format="svg")), len(events)


def test_retry_1_shows_committed_true_on_the_slice() -> None:
    picture, n = _draw("retry-after-commit")
    assert len(picture.items) == n
    [bad] = picture.violating
    assert bad.id == f"e{n - 1}" and "effect_start" in bad.label
    end = next(e for e in picture.slice if "effect_end" in e.label)
    assert "committed=true" in end.label  # the fact RETRY-1 reads
    assert any("commit" in e.text[0] for e in picture.slice)
    assert picture.having("edge", "link", "interval")  # the committed call's interval
    legend = picture.legend
    assert "the violating event" in legend and "in the slice that explains it" in legend
    assert any(line.startswith("commit: the effect changed the world") for line in legend)


def test_sched_1_draws_the_overlap_of_the_two_intervals() -> None:
    picture, _ = _draw("exclusive-as-safe")
    [overlap] = picture.having("edge", "link", "overlap", "violation")
    assert "overlap" in overlap.label
    [bad] = picture.violating
    assert overlap.id.split("__")[1] == bad.id  # the overlap ends at the violating start
    decisions = [e for e in picture.slice if "decision" in e.text[0]]
    assert decisions and all("cls=" in e.label for e in decisions)
    assert "overlap of intervals the invariant forbids" in picture.legend


def test_sched_6_labels_hold_the_footprints() -> None:
    header, events = cex("footprint-blind")
    report = check_trace(events, header)
    assert report.first is not None and report.first.invariant == "SCHED-6"
    figure = trace_figure(header, events, report.first)
    marked = [figure.item(i) for i in figure.marked]
    assert any(
        any(line.startswith(("reads=", "writes=")) for line in it.label)
        for it in marked
        if it.role == "decision"
    )


def test_a_cancel_label_says_its_cause() -> None:
    event = Cancel(seq=9, t=1.0, turn=2, cause=CancelCause.TIMEOUT, occs=("2.0",), limit_s=5)
    label = event_label(event, extra=("limit_s",))
    assert label[0] == "9 cancel turn 2"
    assert "cause=timeout" in label and "occs=2.0" in label and "limit_s=5" in label


def test_an_accepted_trace_has_no_marks_and_no_violation_in_its_legend() -> None:
    header, events = cex("retry-after-commit")
    figure = trace_figure(header, events[:-1], None)
    picture = read_svg(figure_graph(figure).pipe(format="svg"))
    assert not picture.violating and not picture.slice
    assert "the violating event" not in picture.legend
    assert picture.having("cluster", "group", "turn") and picture.having(
        "cluster", "group", "batch"
    )


def _long(n: int, bad: int, slice_: tuple[int, ...]) -> Figure:
    items = [Item(f"e{i}", "loop", (f"{i} request",)) for i in range(n)]
    items[bad] = Item(f"e{bad}", "effect", (f"{bad} effect_start",), mark="violation")
    for s in slice_:
        items[s] = Item(f"e{s}", "decision", (f"{s} decision",), mark="slice")
    return Figure("long", tuple(items), chains=(tuple(it.id for it in items),))


def test_a_window_keeps_the_marked_items_and_the_ones_around_the_violation() -> None:
    figure = window(_long(1000, 700, (3,)), limit=50)
    shown = [it.id for it in figure.items if it.role != "elided"]
    assert len(shown) == 50 and "e700" in shown and "e3" in shown
    assert {"e690", "e710"} <= set(shown)
    gaps = [it for it in figure.items if it.role == "elided"]
    assert sum(int(g.label[0].split()[1]) for g in gaps) == 950
    assert figure.notes[-1] == "window: 50 of 1000 events shown (limit 50)"
    picture = read_svg(figure_graph(figure).pipe(format="svg"))
    assert [e.id for e in picture.violating] == ["e700"]
    assert "events left out of the window" in picture.legend


@pytest.mark.parametrize("limit", [10, 150])
def test_the_window_is_a_size_limit(limit: int) -> None:
    assert len(window(_long(5000, 4000, ()), limit=limit).items) <= limit + 2
