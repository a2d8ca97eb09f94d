"""Paired statistics (`metis_studies._stats`): the paper's summary of matched pairs."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_studies._stats import Pair
from metis_studies._stats import StatsError
from metis_studies._stats import bootstrap_mean_interval
from metis_studies._stats import paired_stats
from metis_studies._stats import read_pairs
from metis_studies._stats import write_pairs

seconds = st.floats(0.001, 10.0, allow_nan=False)


def test_a_known_summary() -> None:
    four = [0.010, 0.012, 0.014, 0.030]
    serial = [0.020, 0.025, 0.026, 0.028]
    s = paired_stats(four, serial, names=("four-class", "serial"))
    assert (s.pairs, s.a_faster, s.b_faster) == (4, 3, 1)
    assert s.median_a_ms == pytest.approx(13.0)
    assert s.median_b_ms == pytest.approx(25.5)
    assert s.mean_diff_ms == pytest.approx(statistics.fmean([-10, -13, -12, 2]))
    assert s.median_ratio == pytest.approx(statistics.median([0.5, 0.48, 14 / 26, 30 / 28]))
    low, high = s.ci95_ms
    assert -13 <= low <= s.mean_diff_ms <= high <= 2
    assert "faster in 3/4 pairs" in s.sentence()


def test_the_interval_is_reproducible_and_depends_on_the_seed() -> None:
    diffs = [float(x % 7) - 3 for x in range(30)]
    assert bootstrap_mean_interval(diffs, seed=30) == bootstrap_mean_interval(diffs, seed=30)
    assert bootstrap_mean_interval(diffs, seed=30) != bootstrap_mean_interval(diffs, seed=31)


def test_constant_differences_give_a_point_interval() -> None:
    s = paired_stats([0.010] * 5, [0.025] * 5)
    assert s.ci95_ms == pytest.approx((-15.0, -15.0))
    assert s.a_faster == 5


@given(st.lists(st.tuples(seconds, seconds), min_size=1, max_size=25), st.floats(-1, 1))
def test_shifting_one_side_shifts_the_difference_and_its_interval(
    pairs: list[tuple[float, float]], shift: float
) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    base = paired_stats(a, b, resamples=500)
    moved = paired_stats([x + shift for x in a], b, resamples=500)
    assert moved.mean_diff_ms == pytest.approx(base.mean_diff_ms + shift * 1000, abs=1e-6)
    for m, o in zip(moved.ci95_ms, base.ci95_ms, strict=True):  # same seed: same resamples
        assert m == pytest.approx(o + shift * 1000, abs=1e-6)
    assert base.ci95_ms[0] <= base.ci95_ms[1]
    assert base.a_faster + base.b_faster <= base.pairs


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [([], [], "no pairs"), ([1.0], [1.0, 2.0], "unequal"), ([float("nan")], [1.0], "finite")],
)
def test_unpairable_samples_are_refused(a: list[float], b: list[float], message: str) -> None:
    with pytest.raises(StatsError, match=message):
        paired_stats(a, b)


def test_raw_pairs_round_trip_through_csv(tmp_path: Path) -> None:
    pairs = [Pair(0, 0.0123456789, 0.025, "a"), Pair(1, 0.011, 0.0261, "b")]
    files = write_pairs(pairs, ("four_class", "serial"), tmp_path / "pairs")
    assert [f.suffix for f in files] == [".csv", ".json"]
    back, names = read_pairs(files[0])
    assert (back, names) == (pairs, ("four_class", "serial"))
    (tmp_path / "bad.csv").write_text("pair,a_s,b_s,first\n0,x,1,a\n")
    with pytest.raises(StatsError, match=r"bad.csv: line 2: could not convert"):
        read_pairs(tmp_path / "bad.csv")
