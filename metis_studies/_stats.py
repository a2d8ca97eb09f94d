"""Paired statistics, as the Metis paper reports its timed studies.

For matched pairs (a_i, b_i), each pair measured back to back in alternating
order so that a stable host or order effect cancels:

- the median of each side;
- the mean paired difference, mean(a_i - b_i), with a percentile bootstrap
  95% interval (resampling the pairs with replacement, a seeded generator,
  so the interval is reproducible from the samples);
- the number of pairs in which each side was faster;
- the median of the per-pair ratios a_i / b_i.

The paper: "14.146 ms median versus 25.958 ms under forced serialization
across 30 matched real-I/O pairs ... mean paired difference -12.295 ms (95%
bootstrap interval [-12.968, -11.694]), with mediation faster in all pairs".
Raw samples are kept beside every summary (`write_pairs`: CSV and JSON).
"""

from __future__ import annotations

import csv
import json
import random
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

RESAMPLES = 10_000
SEED = 30


class StatsError(ValueError):
    """Samples that cannot be paired (unequal lengths, none, not finite)."""


@attrs.frozen
class Pair:
    """One matched pair: both sides' seconds, and which ran first."""

    index: int
    a: float
    b: float
    first: str  # "a" or "b"


@attrs.frozen
class PairedStats:
    """Summary of matched pairs; times in milliseconds, difference = a - b."""

    a: str
    b: str
    pairs: int
    median_a_ms: float
    median_b_ms: float
    mean_diff_ms: float
    ci95_ms: tuple[float, float]
    a_faster: int
    b_faster: int
    median_ratio: float
    seed: int = SEED
    resamples: int = RESAMPLES

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["ci95_ms"] = list(self.ci95_ms)
        return out

    def sentence(self) -> str:
        """The paper's sentence for these pairs."""
        low, high = self.ci95_ms
        return (
            f"{self.a}: median {self.median_a_ms:.3f} ms against {self.median_b_ms:.3f} ms "
            f"under {self.b} across {self.pairs} pairs; mean paired difference "
            f"{self.mean_diff_ms:.3f} ms (95% bootstrap interval [{low:.3f}, {high:.3f}]); "
            f"{self.a} faster in {self.a_faster}/{self.pairs} pairs; "
            f"median ratio {self.median_ratio:.3f}"
        )


def bootstrap_mean_interval(
    values: Sequence[float], *, seed: int = SEED, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (2.5th and 97.5th percentiles)."""
    if not values:
        raise StatsError("no samples")
    rng = random.Random(seed)
    k = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=k)) for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def paired_stats(
    a: Sequence[float],
    b: Sequence[float],
    *,
    names: tuple[str, str] = ("a", "b"),
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> PairedStats:
    """Summarize matched pairs of seconds (a_i with b_i)."""
    if len(a) != len(b):
        raise StatsError(f"unequal sides: {len(a)} against {len(b)} samples")
    if not a:
        raise StatsError("no pairs")
    if any(not (x == x and abs(x) != float("inf")) for x in (*a, *b)):
        raise StatsError("a sample is not a finite number")
    diffs = [(x - y) * 1000 for x, y in zip(a, b, strict=True)]
    low, high = bootstrap_mean_interval(diffs, seed=seed, resamples=resamples)
    ratios = [x / y for x, y in zip(a, b, strict=True) if y > 0]
    return PairedStats(
        a=names[0],
        b=names[1],
        pairs=len(a),
        median_a_ms=statistics.median(a) * 1000,
        median_b_ms=statistics.median(b) * 1000,
        mean_diff_ms=statistics.fmean(diffs),
        ci95_ms=(low, high),
        a_faster=sum(x < y for x, y in zip(a, b, strict=True)),
        b_faster=sum(y < x for x, y in zip(a, b, strict=True)),
        median_ratio=statistics.median(ratios) if ratios else float("nan"),
        seed=seed,
        resamples=resamples,
    )


def stats_of_pairs(pairs: Sequence[Pair], names: tuple[str, str]) -> PairedStats:
    return paired_stats([p.a for p in pairs], [p.b for p in pairs], names=names)


def write_pairs(pairs: Sequence[Pair], names: tuple[str, str], stem: Path) -> list[Path]:
    """The raw samples as `stem.csv` and `stem.json` (seconds)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = stem.with_suffix(".csv"), stem.with_suffix(".json")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["pair", f"{names[0]}_s", f"{names[1]}_s", "first"])
        for p in pairs:
            writer.writerow(
                [p.index, repr(p.a), repr(p.b), names[0] if p.first == "a" else names[1]]
            )
    rows = [{"pair": p.index, names[0]: p.a, names[1]: p.b, "first": p.first} for p in pairs]
    json_path.write_text(json.dumps({"unit": "s", "pairs": rows}, indent=1) + "\n", "utf-8")
    return [csv_path, json_path]


def read_pairs(path: Path) -> tuple[list[Pair], tuple[str, str]]:
    """Pairs back from a `write_pairs` CSV file (for re-analysis)."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or len(header) != 4:
            raise StatsError(f"{path}: line 1: not a pairs file")
        names = (header[1].removesuffix("_s"), header[2].removesuffix("_s"))
        out = []
        for n, row in enumerate(reader, 2):
            try:
                first = "a" if row[3] == names[0] else "b"
                out.append(Pair(int(row[0]), float(row[1]), float(row[2]), first))
            except (IndexError, ValueError) as exc:
                raise StatsError(f"{path}: line {n}: {exc}") from None
    return out, names
