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
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "metis_cli.pytest_plugin", "--metis-coverage=cov.json"
    )
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
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "metis_cli.pytest_plugin", "--no-metis-conformance"
    )
    result.assert_outcomes(passed=3)
