"""`metis study faults | oracle | child-boundary`: the runtime's studies."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .._plots import Marks
from .._plots import cell
from .._plots import new_figure
from .._plots import save
from ..child_boundary import ESCAPE_TOOLS
from ..child_boundary import Cell
from ..child_boundary import run_child_boundary
from ..faults import DISPATCHERS
from ..faults import FAULTS
from ..faults import run_fault_matrix
from ..oracle import RouteResult
from ..oracle import oracle_study
from ._files import Written
from ._files import tally
from ._files import write_results

HOLDS, FAILS = "#66bb6a", "#ef5350"


def write_faults(out: Path) -> Written:
    with tempfile.TemporaryDirectory(prefix="metis-faults-") as tmp:
        rows = {d: run_fault_matrix(Path(tmp) / d, d) for d in DISPATCHERS}
    table = [
        (
            d,
            r.case,
            r.expected_closure,
            r.observed_closure,
            r.expected_effects,
            r.observed_effects,
            r.trace_conforms,
            r.holds,
        )
        for d, rs in rows.items()
        for r in rs
    ]
    headers = (
        "dispatcher",
        "case",
        "expected closure",
        "observed closure",
        "expected effects",
        "observed effects",
        "trace conforms",
        "holds",
    )
    data = {d: [r.to_json() for r in rs] for d, rs in rows.items()}
    files = write_results(out, "faults", data, headers, table)
    fig = new_figure(6.4, 0.6 + 0.28 * len(FAULTS))
    ax = fig.add_subplot()
    marks = Marks()
    names = list(FAULTS)
    for x, d in enumerate(DISPATCHERS):
        for y, r in enumerate(rows[d]):
            cell(ax, marks, x, y, HOLDS if r.holds else FAILS, "holds" if r.holds else "FAILS")
    ax.set_xticks(range(len(DISPATCHERS)), list(DISPATCHERS))
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlim(-0.5, len(DISPATCHERS) - 0.5)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_title("fault matrix against the real runtime", fontsize=9)
    files += save(fig, out / "faults")
    held = [r.holds for rs in rows.values() for r in rs]
    return tally("faults", files, held, "rows hold (both dispatchers)")


def oracle_figure(routes: tuple[RouteResult, ...], stem: Path) -> list[Path]:
    """Calls decided per route, split by the gate's decision; one mark per bar."""
    fig = new_figure(6.4, 3.2)
    ax = fig.add_subplot()
    marks = Marks()
    colours = {"allow": "#66bb6a", "ask": "#ffca28", "deny": "#ef5350"}
    for x, r in enumerate(routes):
        bottom = 0
        for decision, colour in colours.items():
            n = dict(r.decisions).get(decision, 0)
            marks.tag(
                ax.bar([x], [n], bottom=bottom, color=colour, label=decision if x == 0 else None)[0]
            )
            bottom += n
        ax.text(x, bottom, f"{r.agreements}/{r.calls}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(routes)), [r.route.value for r in routes])
    ax.set_ylabel("calls decided (label: agreed with the model)")
    ax.set_title("permission oracle: the runtime gate against the model, per route", fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, stem)


def write_oracle(out: Path, examples: int = 100) -> Written:
    routes = oracle_study(examples)
    rows = [(r.route.value, r.calls, r.agreements, r.asks, dict(r.decisions)) for r in routes]
    headers = ("route", "calls", "agreed", "asks settled", "decisions")
    files = write_results(out, "oracle", [r.to_json() for r in routes], headers, rows)
    files += oracle_figure(routes, out / "oracle")
    ok = all(r.ok for r in routes)
    agreed = sum(r.agreements for r in routes)
    return Written(
        "oracle",
        tuple(files),
        ok,
        f"{agreed}/{sum(r.calls for r in routes)} calls agree on {len(routes)} routes",
    )


def child_boundary_figure(cells: tuple[Cell, ...], stem: Path) -> list[Path]:
    """The 2x2 table as a heatmap: colour = share of seeds whose effect was
    admitted; text = admitted and exposed counts. One mark per cell."""
    import matplotlib

    cmap = matplotlib.colormaps["RdYlGn_r"]
    fig = new_figure(4.8, 4.0)
    ax = fig.add_subplot()
    marks = Marks()
    n = len(ESCAPE_TOOLS)
    for c in cells:
        j = c.to_json()
        share = j["effect_admitted"] / max(1, j["seeds"])
        exposed = "/".join(str(e) for e in sorted(set(j["exposed"])))
        admitted = f"effect admitted {j['effect_admitted']}/{j['seeds']}"
        text = f"{admitted}\n{exposed}/{n} escape tools exposed"
        x, y = (0 if c.cloned_gate else 1), (0 if c.filtered_registry else 1)
        cell(ax, marks, x, y, matplotlib.colors.to_hex(cmap(0.15 + 0.7 * share)), text)
    ax.set_xticks([0, 1], ["cloned gate on", "cloned gate off"])
    ax.set_yticks([0, 1], ["filtered registry on", "filtered registry off"])
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(1.5, -0.5)
    ax.set_title("child boundary: what each protection buys", fontsize=9)
    return save(fig, stem)


def write_child_boundary(out: Path, seeds: int = 5) -> Written:
    cells = run_child_boundary(tuple(range(seeds)))
    rows = []
    for c in cells:
        j = c.to_json()
        rows.append(
            (
                c.cloned_gate,
                c.filtered_registry,
                f"{j['effect_admitted']}/{j['seeds']}",
                "/".join(str(e) for e in sorted(set(j["exposed"]))) + f"/{len(ESCAPE_TOOLS)}",
                c.ok,
            )
        )
    headers = (
        "cloned gate",
        "filtered registry",
        "effect admitted",
        "escape tools exposed",
        "as expected",
    )
    data = {"escape_tools": list(ESCAPE_TOOLS), "cells": [c.to_json() for c in cells]}
    files = write_results(out, "child-boundary", data, headers, rows)
    files += child_boundary_figure(cells, out / "child-boundary")
    held = [c.ok for c in cells]  # the 2x2 table's four cells
    return tally("child-boundary", files, held, f"cells as expected over {seeds} seeds")
