"""`explore()`: a seeded runtime fault is found, shrunk, and written as a
scenario, a regression test and counterexample files; the unpatched runtime
gives nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from metis_check import check_trace
from metis_runtime.permissions import Gate
from metis_runtime.providers import load_scenario
from metis_studies.explore import explore
from metis_studies.explore import read_workload
from metis_studies.explore import workloads
from metis_studies.explore import write_divergence
from metis_trace import Decision
from metis_trace import read_trace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def asks_become_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A realistic gate bug: an `ask` is recorded and enforced as `allow`."""
    decide = Gate.decide

    def buggy(self: Gate, *args: object, **kwargs: object) -> object:
        d = decide(self, *args, **kwargs)  # type: ignore[arg-type]
        return attrs.evolve(d, decision=Decision.ALLOW) if d.decision is Decision.ASK else d

    monkeypatch.setattr(Gate, "decide", buggy)


@pytest.mark.metis_nonconforming  # the seeded fault's traces diverge: that is the point
def test_a_seeded_fault_is_found_shrunk_and_written(
    asks_become_allows: None, tmp_path: Path
) -> None:
    result = explore(
        tmp_path / "runs",
        seed=1,
        budget=60,
        # Shrinking ends when Hypothesis can do no better (seconds when idle); the
        # bound only matters on a loaded machine, where 30 s gave it too few runs.
        shrink_budget=150,
        executions=("in-process",),
        strategy=workloads(),  # composed workloads: the first to diverge is large
    )
    d = result.divergence
    assert d is not None, result.stats
    # an ask recorded as allow: PERM-1 (the facts give ask), or PERM-3 (a protected path allowed)
    assert d.finding.invariant in ("PERM-1", "PERM-3") and not d.flaky, d.finding
    ident = d.finding.invariant.lower().replace("-", "_")
    assert d.workload.size < d.first.size and len(d.workload.calls) < len(d.first.calls)
    # Shrinking is time-bounded (and the machine shared): at least half the calls go.
    assert len(d.workload.calls) <= max(3, len(d.first.calls) // 2), d.workload.calls
    files = write_divergence(d, tmp_path / "out")
    names = {p.name for p in files}
    cex = f"cex_{ident}"
    assert {"scenario.yaml", f"{cex}.jsonl", f"{cex}.itf.json", f"{cex}.dot", f"{cex}.svg"} <= names
    assert f"test_explore_{ident}.py" in names
    # the scenario is the shipped format, and reloads as the same workload
    assert load_scenario(tmp_path / "out" / "scenario.yaml").cassette.interactions
    assert read_workload(tmp_path / "out" / "scenario.yaml") == d.workload
    # the counterexample trace is rejected with the ID; the ITF ends at the violation
    with (tmp_path / "out" / f"{cex}.jsonl").open() as fh:
        header, events = read_trace(fh)
    first = check_trace(events, header).first
    assert first is not None and first.invariant == d.finding.invariant
    itf = json.loads((tmp_path / "out" / f"{cex}.itf.json").read_text())
    assert itf["states"][-1]["#meta"]["violation"] == d.finding.invariant
    # the regression: the recorded trace still breaks the ID (the runtime test,
    # run in a fresh process without the fault, passes)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:metis",
            str(tmp_path / "out" / f"test_explore_{ident}.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_the_runtime_gives_nothing_on_a_short_exploration(tmp_path: Path) -> None:
    result = explore(tmp_path / "runs", seed=1, runs=6, budget=60, executions=("in-process",))
    assert result.divergence is None, result.divergence and result.divergence.finding
    assert result.stats.runs == 6 and result.stats.events > 0
    assert not list((tmp_path / "runs").iterdir())  # runs that conform are removed
