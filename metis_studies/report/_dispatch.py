"""`metis study dispatch`: both batches side by side, their raw pairs, the
paired differences and the span histograms."""

from __future__ import annotations

from pathlib import Path

from .._plots import Marks
from .._plots import new_figure
from .._plots import save
from .._stats import write_pairs
from ..dispatch import TARGET_MAKESPAN
from ..dispatch import TARGET_RATIO
from ..dispatch import DispatchStudy
from ..dispatch import dispatch_study
from ._files import Written
from ._files import write_json
from ._files import write_table

SIDE_COLOURS = {"four-class": "#1f77b4", "serial": "#ff7f0e"}


def differences_figure(study: DispatchStudy, stem: Path) -> list[Path]:
    """Per batch, each pair's difference four-class - serial (ms), with the
    mean and its bootstrap 95% interval; one mark per pair."""
    fig = new_figure(6.4, 1.2 + 1.4 * len(study.batches))
    axes = fig.subplots(len(study.batches), 1, squeeze=False)[:, 0]
    marks = Marks()
    for ax, b in zip(axes, study.batches, strict=True):
        diffs = [(p.a - p.b) * 1000 for p in b.pairs]
        low, high = b.stats.ci95_ms
        ax.axvspan(low, high, color="#cccccc", alpha=0.6, label="bootstrap 95% interval")
        ax.axvline(b.stats.mean_diff_ms, color="black", linewidth=1, label="mean")
        ax.axvline(0, color="#888888", linewidth=0.8, linestyle=":")
        for k, d in enumerate(diffs):
            (point,) = ax.plot([d], [(k % 7) / 7], "o", color=SIDE_COLOURS["four-class"], ms=4)
            marks.tag(point)
        ax.set_yticks([])
        ax.set_title(
            f"{b.batch}: four-class faster in {b.stats.a_faster}/{b.stats.pairs} pairs, "
            f"median ratio {b.stats.median_ratio:.3f}",
            fontsize=9,
        )
    axes[-1].set_xlabel("paired difference, four-class - serial (ms)")
    axes[0].legend(fontsize=7, loc="upper left")
    return save(fig, stem)


def histograms_figure(study: DispatchStudy, stem: Path) -> list[Path]:
    """Per batch, the spans of each side (ms); one mark per histogram bar."""
    fig = new_figure(6.4, 1.2 + 1.6 * len(study.batches))
    axes = fig.subplots(len(study.batches), 1, squeeze=False)[:, 0]
    marks = Marks()
    for ax, b in zip(axes, study.batches, strict=True):
        sides = {
            "four-class": [p.a * 1000 for p in b.pairs],
            "serial": [p.b * 1000 for p in b.pairs],
        }
        lo = min(min(v) for v in sides.values())
        hi = max(max(v) for v in sides.values())
        bins = [lo + (hi - lo) * i / 16 for i in range(17)] if hi > lo else 8
        for side, values in sides.items():
            _, _, bars = ax.hist(values, bins=bins, alpha=0.7, color=SIDE_COLOURS[side], label=side)
            marks.tag_all([bar for bar in bars if bar.get_height() > 0])
        ax.axvline(
            b.bounds.critical_path_ms,
            color="black",
            linestyle="--",
            linewidth=1,
            label="critical path",
        )
        ax.set_title(f"{b.batch}: span per run ({b.stats.pairs} pairs)", fontsize=9)
        ax.legend(fontsize=7)
    axes[-1].set_xlabel("batch span (ms)")
    return save(fig, stem)


def write_dispatch(out: Path, pairs: int = 30) -> Written:
    study = dispatch_study(("cpu", "io"), pairs)
    files = [write_json(out / "dispatch.json", study.to_json())]
    rows = []
    for b in study.batches:
        files += write_pairs(b.pairs, ("four_class", "serial"), out / f"dispatch-pairs-{b.batch}")
        s = b.stats
        rows.append(
            (
                b.batch,
                s.pairs,
                s.median_a_ms,
                s.median_b_ms,
                s.mean_diff_ms,
                f"[{s.ci95_ms[0]:.3f}, {s.ci95_ms[1]:.3f}]",
                f"{s.a_faster}/{s.pairs}",
                s.median_ratio,
                b.bounds.critical_path_ms,
                b.bounds.work_bound_ms,
                b.makespan_over_critical_path,
                b.best_ratio,
                "yes" if b.meets_targets else "no",
            )
        )
    headers = (
        "batch",
        "pairs",
        "median four-class (ms)",
        "median serial (ms)",
        "mean paired difference (ms)",
        "bootstrap 95% interval (ms)",
        "four-class faster",
        "median ratio",
        "critical path (ms)",
        "CPU work / cores (ms)",
        "makespan / critical path",
        "best ratio this machine allows",
        f"targets (ratio <= {TARGET_RATIO}, makespan <= {TARGET_MAKESPAN}x)",
    )
    files += write_table(out / "dispatch", headers, rows)
    files += differences_figure(study, out / "dispatch-differences")
    files += histograms_figure(study, out / "dispatch-histograms")
    io = study.batch("io")
    summary = (
        f"io batch: ratio {io.stats.median_ratio:.3f}, makespan "
        f"{io.makespan_over_critical_path:.2f}x the critical path, faster in "
        f"{io.stats.a_faster}/{io.stats.pairs}; cpu batch: ratio "
        f"{study.batch('cpu').stats.median_ratio:.3f}"
    )
    return Written("dispatch", tuple(files), True, summary)
