"""Shortest counterexamples for every ablation, in all four formats."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from metis_check import check_trace
from metis_proofs import ABLATIONS
from metis_proofs import Counterexample
from metis_proofs import UnknownAblation
from metis_proofs import find_counterexample
from metis_trace import DecisionEvent
from metis_trace import read_trace
from tests.draw._svg import read_svg

MAX_DEPTH = 12


@cache
def cex(ablation: str) -> Counterexample:
    found = find_counterexample(ablation, MAX_DEPTH)
    assert found is not None, f"{ablation}: no counterexample within {MAX_DEPTH}"
    return found


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_check_trace_rejects_it_with_the_same_id(ablation: str) -> None:
    c = cex(ablation)
    assert c.invariant == ABLATIONS[ablation]
    report = check_trace(list(c.events), c.header)
    assert report.first is not None
    assert report.first.invariant == c.invariant
    assert report.first.index == len(c.events) - 1  # the last step, no earlier one
    assert c.confirmed


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_it_is_the_shortest(ablation: str) -> None:
    c = cex(ablation)
    assert c.depth == len(c.events)
    if c.depth > 1:
        assert find_counterexample(ablation, c.depth - 1, minimize=False) is None


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_it_writes_trace_itf_graph_and_a_regression_test(ablation: str, tmp_path: Path) -> None:
    c = cex(ablation)
    files = c.write(tmp_path)
    header, events = read_trace(files.trace.read_text().splitlines())
    first = check_trace(events, header).first
    assert first is not None and first.invariant == c.invariant

    itf = json.loads(files.itf.read_text())
    assert set(itf) == {"#meta", "vars", "states"}
    assert [s["#meta"]["index"] for s in itf["states"]] == list(range(len(events) + 1))
    for state in itf["states"]:
        assert set(itf["vars"]) <= set(state)
    assert itf["states"][-1]["viol"] == c.invariant

    dot = files.dot.read_text()
    assert f"e{len(events) - 1} [label=" in dot and "#e53935" in dot
    if shutil.which("dot"):
        assert files.svg is not None and files.svg.read_text().lstrip().startswith("<?xml")
        # Drawn by the one drawing module: the last step violating, its slice, the legend.
        picture = read_svg(files.svg.read_text())
        assert [e.id for e in picture.violating] == [f"e{len(events) - 1}"]
        assert {e.id for e in picture.slice} == {f"e{i}" for i in first.slice} - {f"e{first.index}"}
        assert "the violating event" in picture.legend

    namespace = runpy.run_path(str(files.test))
    tests = [v for k, v in namespace.items() if k.startswith("test_")]
    assert len(tests) == 1
    tests[0]()  # the generated regression test passes


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_the_abstraction_of_its_trace_gets_the_same_verdicts(ablation: str) -> None:
    """z3 -> trace -> z3: every step of the counterexample's trace, abstracted
    again (`_abstraction.py`), gets `step`'s verdict in the mirror, up to the
    violation."""
    from tests.smt.test_loop_agreement import compare

    c = cex(ablation)
    assert compare(c.header, list(c.events), allowed=False) == len(c.events)


def test_an_unkeyed_queue_edit_writes_outside_its_key() -> None:
    """`queue-edit-unkeyed`: the decision the path labels not `keyed` is a
    Queue edit call whose write its key does not name, judged at the decision."""
    from metis_model._interference import queue_edit
    from metis_model._interference import queue_key_problem

    c = cex("queue-edit-unkeyed")
    decision = c.events[-1]
    assert isinstance(decision, DecisionEvent) and queue_edit(decision)
    assert decision.key is not None and decision.writes
    assert not any(w.startswith(decision.key[len("file:") :]) for w in decision.writes)
    assert queue_key_problem(decision) is not None
    first = check_trace(list(c.events), c.header).first
    assert first is not None and "does not name" in first.message


def test_a_generated_test_runs_under_pytest(tmp_path: Path) -> None:
    files = cex("queue-not-fifo").write(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(files.test)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_unknown_ablation_is_an_error() -> None:
    with pytest.raises(UnknownAblation, match="valid: no-preflight"):
        find_counterexample("no-such-thing", 3)
