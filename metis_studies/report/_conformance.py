"""`metis study coverage | snapshot | read-marker`: conformance studies."""

from __future__ import annotations

import tempfile
from pathlib import Path

from metis_check import check_trace
from metis_check import simulate

from .._plots import Marks
from .._plots import cell
from .._plots import new_figure
from .._plots import save
from ..conformance import CoverageProfile
from ..conformance import SnapshotConformance
from ..conformance import coverage_profile
from ..conformance import frozen_corpus
from ..conformance import snapshot_conformance
from ..conformance import trace_reports
from ..faults import run_fault_matrix
from ..read_marker import ConditionResult
from ..read_marker import read_marker_study
from ._files import Written
from ._files import write_results

SERIES = {"runtime": "#1f77b4", "model": "#9467bd"}


def coverage_profiles(runs: int) -> dict[str, CoverageProfile]:
    """The runtime's: every trace the fault matrix writes (four-class); the
    model's: `runs` simulated runs."""
    with tempfile.TemporaryDirectory(prefix="metis-coverage-") as tmp:
        run_fault_matrix(Path(tmp), "four-class")
        runtime = coverage_profile(trace_reports(Path(tmp)))
    model = coverage_profile(check_trace(e, h) for h, e in (simulate(seed) for seed in range(runs)))
    return {"runtime": runtime, "model": model}


def invariants_figure(profiles: dict[str, CoverageProfile], stem: Path) -> list[Path]:
    """Checks per invariant ID, one bar per ID and profile (log scale)."""
    ids = [i for i, _ in next(iter(profiles.values())).invariants]
    fig = new_figure(6.4, 1.0 + 0.16 * len(ids))
    ax = fig.add_subplot()
    marks = Marks()
    height = 0.8 / len(profiles)
    for k, (name, p) in enumerate(profiles.items()):
        counts = dict(p.invariants)
        ys = [y + k * height for y in range(len(ids))]
        bars = ax.barh(
            ys,
            [counts[i] for i in ids],
            height=height,
            color=SERIES[name],
            label=f"{name}: {p.invariant_share:.0%} of IDs checked",
        )
        marks.tag_all(list(bars))
    ax.set_xscale("symlog")
    ax.set_yticks(range(len(ids)), ids, fontsize=6)
    ax.set_ylim(len(ids), -1)
    ax.set_xlabel("checks evaluated")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("invariant coverage", fontsize=9)
    return save(fig, stem)


def transitions_figure(profiles: dict[str, CoverageProfile], stem: Path) -> list[Path]:
    """The loop's transitions (phase x event kind) each profile took; one mark per transition."""
    some = next(iter(profiles.values()))
    phases = sorted({t.split("--")[0] for t, _ in some.transitions})
    kinds = sorted({t.split("--")[1] for t, _ in some.transitions})
    fig = new_figure(6.4, 1.0 + 2.2 * len(profiles))
    axes = fig.subplots(len(profiles), 1, squeeze=False)[:, 0]
    marks = Marks()
    for ax, (name, p) in zip(axes, profiles.items(), strict=True):
        for t, n in p.transitions:
            phase, kind = t.split("--")
            colour = SERIES[name] if n else "#eeeeee"
            cell(
                ax,
                marks,
                kinds.index(kind),
                phases.index(phase),
                colour,
                str(n) if n else "",
                edgecolor="#999999",
                linewidth=0.5,
            )
        ax.set_xlim(-0.5, len(kinds) - 0.5)
        ax.set_ylim(len(phases) - 0.5, -0.5)
        ax.set_xticks(range(len(kinds)), kinds, rotation=60, ha="right", fontsize=6)
        ax.set_yticks(range(len(phases)), phases, fontsize=7)
        ax.set_title(
            f"{name}: {p.transition_share:.0%} of the loop's transitions taken", fontsize=9
        )
    return save(fig, stem)


def write_coverage(out: Path, runs: int = 200) -> Written:
    profiles = coverage_profiles(runs)
    rows = [
        (inv, *(dict(p.invariants)[inv] for p in profiles.values()))
        for inv, _ in profiles["runtime"].invariants
    ]
    data = {n: p.to_json() for n, p in profiles.items()}
    files = write_results(out, "coverage", data, ("invariant", *profiles), rows)
    files += invariants_figure(profiles, out / "coverage-invariants")
    files += transitions_figure(profiles, out / "coverage-transitions")
    r, m = profiles["runtime"], profiles["model"]
    summary = (
        f"runtime (fault matrix): {r.invariant_share:.0%} of IDs, {r.transition_share:.0%} of "
        f"transitions; model ({m.reports} runs): {m.invariant_share:.0%}, {m.transition_share:.0%}"
    )
    return Written("coverage", tuple(files), True, summary)


def snapshot_figure(result: SnapshotConformance, stem: Path) -> list[Path]:
    """Leaf pass / fail / skip per frozen unit (log scale); one mark per bar."""
    fig = new_figure(6.4, 1.2 + 0.22 * len(result.units))
    ax = fig.add_subplot()
    marks = Marks()
    colours = {"pass": "#66bb6a", "fail": "#ef5350", "skip": "#bdbdbd"}
    names = [Path(u.source).name[:28] + f" ({u.format})" for u in result.units]
    for k, (label, colour) in enumerate(colours.items()):
        values = [
            getattr(u, {"pass": "passed", "fail": "failed", "skip": "skipped"}[label])
            for u in result.units
        ]
        bars = ax.barh(
            [y + k * 0.27 for y in range(len(names))],
            values,
            height=0.27,
            color=colour,
            label=label,
        )
        marks.tag_all(list(bars))
    ax.set_xscale("symlog")
    ax.set_yticks(range(len(names)), names, fontsize=6)
    ax.set_ylim(len(names), -1)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(
        f"RQ1 snapshot conformance: {result.passed} pass, {result.failed} fail, "
        f"{result.skipped} skip; {result.coverage_of_all:.1%} of the model's IDs decided",
        fontsize=8,
    )
    return save(fig, stem)


def write_snapshot(out: Path) -> Written:
    result = snapshot_conformance(frozen_corpus())
    rows = [
        (u.source, u.format, u.verdict, u.passed, u.failed, u.skipped, " ".join(u.decided))
        for u in result.units
    ]
    headers = ("unit", "format", "verdict", "pass", "fail", "skip", "decided")
    files = write_results(out, "snapshot", result.to_json(), headers, rows)
    files += snapshot_figure(result, out / "snapshot")
    summary = (
        f"{len(result.units)} frozen units: {result.passed} pass / {result.failed} fail / "
        f"{result.skipped} skip leaves; {len(result.decided)}/{len(result.applicable)} "
        f"applicable IDs decided ({result.coverage_of_all:.1%} of all)"
    )
    return Written("snapshot", tuple(files), result.failed == 0, summary)


def read_marker_figure(results: tuple[ConditionResult, ...], stem: Path) -> list[Path]:
    fig = new_figure(6.4, 3.2)
    ax = fig.add_subplot()
    marks = Marks()
    for x, c in enumerate(results):
        colour = "#bdbdbd" if c.skipped else ("#66bb6a" if c.passed == len(c.trials) else "#ef5350")
        marks.tag(ax.bar([x], [c.passed], color=colour)[0])
        label = "skipped" if c.skipped else f"{c.passed}/{len(c.trials)}"
        ax.text(x, c.passed, label, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(
        range(len(results)), [c.condition for c in results], rotation=30, ha="right", fontsize=7
    )
    ax.set_ylabel("trials passed")
    ax.set_title("Read-marker protocol: closure, marker in result and in final text", fontsize=9)
    return save(fig, stem)


def write_read_marker(out: Path, trials: int = 3) -> Written:
    results = read_marker_study(trials)
    rows = [
        (c.condition, "live" if c.live else "replay", f"{c.passed}/{len(c.trials)}", c.skipped)
        for c in results
    ]
    headers = ("condition", "kind", "passed", "skipped")
    files = write_results(out, "read-marker", [c.to_json() for c in results], headers, rows)
    files += read_marker_figure(results, out / "read-marker")
    ran = [c for c in results if not c.skipped]
    ok = all(c.passed == len(c.trials) for c in ran)
    skipped = "; ".join(c.skipped for c in results if c.skipped)
    summary = f"{sum(c.passed for c in ran)}/{sum(len(c.trials) for c in ran)} trials pass" + (
        f" ({skipped})" if skipped else ""
    )
    return Written("read-marker", tuple(files), ok, summary)
