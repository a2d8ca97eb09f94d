"""The pytest plugin replays every recorded trace and fails divergent tests."""

from __future__ import annotations

import pytest

INNER = """
import os, random
import pytest
from metis_model import simulate, broken_trace
from metis_model.trace import dumps_trace

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


def test_plugin_checks_recorded_traces(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--metis-coverage=cov.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*recorded trace does not conform to the model*",
            "*CLOSE-1 at line*second result*",
            "*metis conformance*",
            "*recorded traces replayed against the model*",
            "*invariants checked:*",
        ]
    )
    import json

    cov = json.loads((pytester.path / "cov.json").read_text())
    assert cov["traces"] == 1  # only the conforming trace counts towards coverage
    assert cov["invariants"]["AUTH-1"] > 0
    assert "never_taken" in cov


def test_plugin_can_be_switched_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--no-metis-conformance")
    result.assert_outcomes(passed=3)


FIXTURES = """
import os
import pytest
from metis_model import simulate, broken_trace
from metis_model.trace import dumps_trace

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
import metis_model._check
from _pytest.assertion.rewrite import AssertionRewritingHook

def test_metis_modules_keep_their_asserts():
    assert not isinstance(metis_model._check.__loader__, AssertionRewritingHook)
    assert "pytest_metis" in sys.modules
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
