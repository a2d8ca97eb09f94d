"""`metis study permission-modes | model-ablations`: the model's own studies."""

from __future__ import annotations

from pathlib import Path

from metis_trace import Decision

from .._plots import Marks
from .._plots import cell
from .._plots import new_figure
from .._plots import save
from ..model_ablations import AblationResult
from ..model_ablations import model_ablations
from ..permission_modes import DecisionMap
from ..permission_modes import PermissionModes
from ..permission_modes import permission_modes
from ._files import Written
from ._files import tally
from ._files import write_results

DECISION_COLOURS = {Decision.ALLOW: "#66bb6a", Decision.ASK: "#ffca28", Decision.DENY: "#ef5350"}


def decision_maps_figure(maps: tuple[DecisionMap, ...], stem: Path) -> list[Path]:
    """One panel per rule situation: modes (rows) x fact combinations
    (columns: kind, +P protected, +S secret, +O out of scope); one mark per cell."""
    fig = new_figure(11, 1.0 + 1.9 * len(maps))
    axes = fig.subplots(len(maps), 1, squeeze=False)[:, 0]
    marks = Marks()
    for ax, m in zip(axes, maps, strict=True):
        for y, row in enumerate(m.decisions):
            for x, d in enumerate(row):
                cell(ax, marks, x, y, DECISION_COLOURS[d], edgecolor="white", linewidth=0.5)
        ax.set_xlim(-0.5, len(m.columns) - 0.5)
        ax.set_ylim(len(m.modes) - 0.5, -0.5)
        ax.set_yticks(range(len(m.modes)), [mode.value for mode in m.modes], fontsize=7)
        ax.set_xticks(range(len(m.columns)), m.columns, rotation=90, fontsize=6)
        ax.set_title(f"decisions with {m.rules} (green allow, yellow ask, red deny)", fontsize=9)
    return save(fig, stem)


def loosened_figure(result: PermissionModes, stem: Path) -> list[Path]:
    fig = new_figure(6.4, 3.0)
    ax = fig.add_subplot()
    marks = Marks()
    names = [m.value for m, _ in result.loosened]
    values = [n for _, n in result.loosened]
    marks.tag_all(list(ax.bar(names, values, color="#ab47bc")))
    ax.set_ylabel(f"decisions loosened (of {result.combinations_per_mode})")
    ax.set_title("ablation: authority-first rule order against deny-first", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    return save(fig, stem)


def write_permission_modes(out: Path) -> Written:
    result = permission_modes()
    rows = []
    loosened = dict(result.loosened)
    for mode, counts in result.decisions:
        c = dict(counts)
        rows.append(
            (mode.value, c[Decision.ALLOW], c[Decision.ASK], c[Decision.DENY], loosened[mode])
        )
    headers = ("mode", "allow", "ask", "deny", "authority-first loosens")
    files = write_results(out, "permission-modes", result.to_json(), headers, rows)
    files += decision_maps_figure(result.maps, out / "permission-modes-map")
    files += loosened_figure(result, out / "permission-modes-ablation")
    summary = (
        f"{result.combinations_per_mode} fact combinations per mode; mode order: "
        f"{result.order_violations} violations in {result.ordered_pairs} ordered pairs; "
        f"authority-first loosens {sum(loosened.values())} decisions"
    )
    return Written("permission-modes", tuple(files), result.ok, summary)


def ablations_figure(results: tuple[AblationResult, ...], stem: Path) -> list[Path]:
    fig = new_figure(6.4, 3.2)
    ax = fig.add_subplot()
    marks = Marks()
    for x, r in enumerate(results):
        colour = "#66bb6a" if r.ok else "#ef5350"
        marks.tag(ax.bar([x], [r.depth or 0], color=colour)[0])
        ax.text(x, (r.depth or 0), r.invariant, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(
        range(len(results)), [r.ablation for r in results], rotation=30, ha="right", fontsize=7
    )
    ax.set_ylabel("events in the shortest counterexample")
    ax.set_title("the model's ablations: each breaks its invariant (z3 BMC)", fontsize=9)
    return save(fig, stem)


def write_model_ablations(out: Path, names: list[str] | None = None) -> Written:
    results = model_ablations(names)
    rows = [
        (r.ablation, r.invariant, r.depth, r.calls, r.confirmed, r.checker_says, r.seconds)
        for r in results
    ]
    headers = (
        "ablation",
        "breaks",
        "depth (events)",
        "calls",
        "checker confirms",
        "checker says",
        "seconds",
    )
    data = [r.to_json() for r in results]
    files = write_results(out, "model-ablations", data, headers, rows)
    files += ablations_figure(results, out / "model-ablations")
    return tally(
        "model-ablations", files, [r.ok for r in results], "ablations refuted and confirmed"
    )
