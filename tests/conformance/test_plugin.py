"""The pytest plugin replays every recorded trace and fails divergent tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

INNER = """
import os, random
import pytest
from metis_check import simulate, broken_trace
from metis_trace import dumps_trace

def record(tmp_path, header, events, name):
    path = tmp_path / name
    path.write_text(dumps_trace(header, events))
    with open(os.environ["METIS_TRACE_LOG"], "a") as log:
        log.write(str(path) + "\\n")

def test_valid(tmp_path):
    record(tmp_path, *simulate(3), "ok.jsonl")

def test_broken(tmp_path):
    record(tmp_path, *broken_trace("CLOSE-1", 2), "bad.jsonl")

@pytest.mark.metis_nonconforming
def test_broken_on_purpose(tmp_path):
    record(tmp_path, *broken_trace("SCHED-2", 2), "bad.jsonl")
"""


# The inner sessions record broken traces on purpose; the outer test must not check them.
pytestmark = pytest.mark.metis_nonconforming


def _with_coverage(
    pytester: pytest.Pytester, passed: int, failed: int, lines: list[str], **files: str
) -> tuple[Any, dict[str, Any]]:
    """An inner session over `files` that writes the plugin's coverage: it must
    end with `passed` and `failed` tests and print `lines` (in order). Its
    result and that coverage."""
    pytester.makepyfile(**files)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--metis-coverage=cov.json")
    result.assert_outcomes(passed=passed, failed=failed)
    result.stdout.fnmatch_lines(lines)
    return result, json.loads((pytester.path / "cov.json").read_text())


def test_plugin_checks_recorded_traces(pytester: pytest.Pytester) -> None:
    lines = [
        "*recorded trace does not conform to the model*",
        "*CLOSE-1 at line*second result*",
        "*metis conformance*",
        "*reports (recorded traces, trees, run files*counted",
        "*invariants checked:*",
    ]
    _, cov = _with_coverage(pytester, 2, 1, lines, test_inner=INNER)
    # The conforming trace counts, and each checked test's scan of its files
    # (TRACE-2); the broken trace does not, nor the nonconforming test at all.
    assert cov["reports"] == 3
    assert cov["invariants"]["AUTH-1"] > 0 and cov["invariants"]["TRACE-2"] == 2
    assert "never_taken" in cov


def test_plugin_can_be_switched_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--no-metis-conformance")
    result.assert_outcomes(passed=3)


FIXTURES = """
import os
import pytest
from metis_check import simulate, broken_trace
from metis_trace import dumps_trace

def record(path, header, events):
    path.write_text(dumps_trace(header, events))
    with open(os.environ["METIS_TRACE_LOG"], "a") as log:
        log.write(str(path) + "\\n")

@pytest.fixture
def broken_in_setup(tmp_path):
    record(tmp_path / "setup.jsonl", *broken_trace("CLOSE-1", 2))

@pytest.fixture
def broken_in_teardown(tmp_path):
    yield
    record(tmp_path / "teardown.jsonl", *broken_trace("CLOSE-1", 3))

@pytest.fixture
def valid_in_setup(tmp_path):
    record(tmp_path / "ok.jsonl", *simulate(4))

def test_setup(broken_in_setup):
    pass

def test_teardown(broken_in_teardown):
    pass

def test_fine(valid_in_setup):
    pass
"""


def test_plugin_checks_traces_written_by_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fixtures=FIXTURES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    # setup's trace fails the test itself; teardown's is an error in teardown.
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_teardown*",
            "recorded trace does not conform to the model (written during setup or teardown):",
            "*teardown.jsonl: CLOSE-1 at line*",
            "*_ test_setup _*",
            "recorded trace does not conform to the model:",
            "*setup.jsonl: CLOSE-1 at line*",
        ]
    )


def test_plugin_is_an_entry_point_and_rewrites_no_metis_module(pytester: pytest.Pytester) -> None:
    from importlib.metadata import entry_points

    (plugin,) = [e for e in entry_points(group="pytest11") if e.name == "metis"]
    assert plugin.value == "pytest_metis" and plugin.dist is not None
    assert plugin.dist.name == "pytest-metis"
    pytester.makepyfile(
        test_rewrite="""
import sys
import metis_check._check
from _pytest.assertion.rewrite import AssertionRewritingHook

def test_metis_modules_keep_their_asserts():
    assert not isinstance(metis_check._check.__loader__, AssertionRewritingHook)
    assert "pytest_metis" in sys.modules
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


TREE = """
import json, os
import pytest
from metis_model import resolve
from metis_trace import (
    Assistant, CallRef, Commit, DecisionEvent, EffectEnd, EffectOutcome, EffectStart, Facts,
    Mode, Request, Result, ResultsSent, ResultStatus, RunEnd, RunStatus, Spawn, ToolKind,
    TraceHeader, TurnStart, dumps_trace,
)

TOOLS = ("read", "spawn_agent")

def record(path, header, events):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_trace(header, events))
    with open(os.environ["METIS_TRACE_LOG"], "a") as log:
        log.write(str(path) + "\\n")

def answer(events, turn):
    n = len(events)
    events += [TurnStart(seq=n, t=n, turn=turn), Request(seq=n + 1, t=n + 1, turn=turn),
               Assistant(seq=n + 2, t=n + 2, turn=turn), RunEnd(seq=n + 3, t=n + 3, status=RunStatus.COMPLETED)]
    return events

def root_events():
    facts = Facts(mode=Mode.BYPASS, kind=ToolKind.EXEC)
    r = resolve(facts)
    call = CallRef(occ="1.0", call_id="c1", tool="spawn_agent")
    ev = [TurnStart(seq=0, t=0, turn=1), Request(seq=1, t=1, turn=1),
          Assistant(seq=2, t=2, turn=1, calls=(call,)),
          DecisionEvent(seq=3, t=3, occ="1.0", decision=r.decision, stage=r.stage.value, facts=facts),
          EffectStart(seq=4, t=4, occ="1.0"),
          Spawn(seq=5, t=5, agent_id="a1", child_mode=Mode.BYPASS, child_tools=("read",),
                parent_mode=Mode.BYPASS, parent_tools=TOOLS),
          Commit(seq=6, t=6, occ="1.0", outcome=EffectOutcome.OK),
          EffectEnd(seq=7, t=7, occ="1.0", outcome=EffectOutcome.OK, committed=True),
          Result(seq=8, t=8, occ="1.0", call_id="c1", status=ResultStatus.OK),
          ResultsSent(seq=9, t=9, turn=1, occs=("1.0",), call_ids=("c1",))]
    return answer(ev, 2)

def tree(tmp_path, child_depth):
    root = TraceHeader(run_id="r", root_run_id="r", mode=Mode.BYPASS, tools=TOOLS,
                       meta={"guard": {"max_depth": 3, "max_total": 4, "max_per_parent": 2}})
    child = TraceHeader(run_id="a", root_run_id="r", parent_id="root", agent_id="a1",
                        depth=child_depth, mode=Mode.BYPASS, tools=("read",))
    record(tmp_path / "run" / "trace.jsonl", root, root_events())
    record(tmp_path / "run" / "agents" / "a1" / "trace.jsonl", child, answer([], 1))

def test_a_tree(tmp_path):
    tree(tmp_path, 1)

def test_a_tree_with_a_bad_link(tmp_path):
    tree(tmp_path, 2)

def test_a_run_that_leaked(tmp_path):
    tree(tmp_path, 1)
    (tmp_path / "run" / "trace.jsonl.journal").write_text(
        json.dumps({"type": "commit", "content": "AKIA" + "IOSFODNN7EXAMPLE"}) + "\\n"
    )
"""


def test_plugin_checks_trees_and_the_files_runs_wrote(pytester: pytest.Pytester) -> None:
    lines = [
        "*_ test_a_tree_with_a_bad_link _*",
        "*CHILD-5*depth 2, parent root has 0*",
        "*_ test_a_run_that_leaked _*",
        "*TRACE-2*trace.jsonl.journal: line 1, column *: a aws-access-key-id credential*",
    ]
    result, cov = _with_coverage(pytester, 1, 2, lines, test_tree=TREE)
    assert "IOSFODNN7EXAMPLE" not in result.stdout.str()
    # Two trees conformed (the leaking run's tree itself is fine): two links each.
    assert cov["invariants"]["CHILD-5"] == 4 and cov["invariants"]["CHILD-4"] == 2


TWO = """
from metis_check import simulate
from metis_trace import dumps_trace
import os

def record(tmp_path, seed):
    path = tmp_path / f"t{seed}.jsonl"
    path.write_text(dumps_trace(*simulate(seed)))
    with open(os.environ["METIS_TRACE_LOG"], "a") as log:
        log.write(str(path) + "\\n")

def test_one(tmp_path):
    record(tmp_path, 1)

def test_two(tmp_path):
    record(tmp_path, 2)
"""


def test_required_coverage_is_summed_over_workers_and_names_what_is_missing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_two=TWO)
    alone = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:xdist", "--metis-coverage=alone.json"
    )
    alone.assert_outcomes(passed=2)
    assert alone.ret == 0  # not required: reported only
    split = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--metis-require-coverage",
        "--metis-coverage=split.json",
    )
    split.assert_outcomes(passed=2)
    assert split.ret == 1  # every test passed, but the workload misses IDs
    split.stdout.fnmatch_lines(
        ["*FAILED --metis-require-coverage: never reached by the workload:*CHILD-4*"]
    )
    one, two = (json.loads((pytester.path / f).read_text()) for f in ("alone.json", "split.json"))
    assert one == two  # the two workers' counts, added up, are the one process's
