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

from metis_model import check_trace
from metis_model.trace import Decision, read_trace
from metis_runtime.permissions import Gate
from metis_runtime.providers import load_scenario
from metis_studies.explore import explore, read_workload, workloads, write_divergence

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
        shrink_budget=20,
        executions=("in-process",),
        strategy=workloads(),  # composed workloads: the first to diverge is large
    )
    d = result.divergence
    assert d is not None, result.stats
    assert d.finding.invariant == "PERM-1" and not d.flaky
    assert d.workload.size < d.first.size and len(d.workload.calls) < len(d.first.calls)
    assert len(d.workload.calls) == 1, d.workload.calls  # one ask is the whole bug
    files = write_divergence(d, tmp_path / "out")
    names = {p.name for p in files}
    assert {"scenario.yaml", "cex_perm_1.jsonl", "cex_perm_1.itf.json", "cex_perm_1.dot"} <= names
    assert "cex_perm_1.svg" in names and "test_explore_perm_1.py" in names
    # the scenario is the shipped format, and reloads as the same workload
    assert load_scenario(tmp_path / "out" / "scenario.yaml").cassette.interactions
    assert read_workload(tmp_path / "out" / "scenario.yaml") == d.workload
    # the counterexample trace is rejected with the ID; the ITF ends at the violation
    with (tmp_path / "out" / "cex_perm_1.jsonl").open() as fh:
        header, events = read_trace(fh)
    assert check_trace(events, header).first.invariant == "PERM-1"  # type: ignore[union-attr]
    itf = json.loads((tmp_path / "out" / "cex_perm_1.itf.json").read_text())
    assert itf["states"][-1]["#meta"]["violation"] == "PERM-1"
    # the regression: the recorded trace still breaks PERM-1 (the runtime test,
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
            str(tmp_path / "out" / "test_explore_perm_1.py"),
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
