"""TRACE-3: recorded outcomes against witnessed exits (specs/witness.md).

A real run under the witness where a background job fails agrees with its
trace; the same trace doctored to record the job `ok` is a TRACE-3
violation. Made-up witnessed runs (`metis_check._witness_cases`) hold the
property both ways under Hypothesis; strace's exit lines are parsed; a
witness file of version 1 (no exits) is read and warns instead of passing.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import WitnessedTrace
from metis_check import check_witness
from metis_check._witness_cases import break_exit
from metis_check._witness_cases import exit_case
from metis_trace import EffectOutcome
from metis_trace import JobDone
from metis_trace import ProcessExit
from metis_trace import read_trace
from metis_witness._exec import STRACE_ARGS
from metis_witness._exec import ExecParser
from tests._metis_cli import metis
from tests.runtime.test_loop_support import write_scenario

from ._support import agrees_and_broken_is
from ._support import blind_to
from ._support import require_strace
from ._support import sessions
from ._support import witness_check
from ._support import witnessed_replay


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_made_up_runs_agree_and_a_disagreeing_exit_is_trace_3(seed: int) -> None:
    case, found, broken = agrees_and_broken_is(seed, exit_case, break_exit, "TRACE-3")
    assert found.checks["TRACE-3"] == len(case[1][2].calls)  # type: ignore[union-attr]
    assert broken.violations[0].witness_line is not None


def test_an_exit_the_witness_did_not_observe_warns_and_is_not_checked() -> None:
    header, events, witness = exit_case(random.Random(7), calls=3)
    old = blind_to(witness[0], "exits", 1, ProcessExit)
    found = check_witness([old], [WitnessedTrace("t", header, events)])
    assert found.ok and "TRACE-3" not in found.checks
    assert any("did not observe exits" in u and "3 bash call(s)" in u for u in found.unobserved)


def test_strace_exit_lines_are_parsed_and_only_one_q_keeps_them() -> None:
    assert "-q" in STRACE_ARGS and "-qq" not in STRACE_ARGS  # -qq drops the exit lines
    parser = ExecParser(0.0, lambda: 9.0)
    lines = (
        "7 1.5 +++ exited with 3 +++\n"
        "8 1.6 +++ killed by SIGKILL (core dumped) +++\n"
        "9 1.7 +++ killed by SIGTERM +++\n"
    )
    got = [(r["pid"], r.get("status"), r.get("signal")) for r in parser.feed(lines)]
    assert got == [(7, 3, None), (8, None, "SIGKILL"), (9, None, "SIGTERM")]


def _failing_job_run(tmp_path: Path) -> Path:
    scenario = write_scenario(
        tmp_path / "jobs.yaml",
        [
            [
                {"text": "Two commands and a job."},
                {"tool": "bash", "id": "t1", "input": {"command": "echo fine"}},
                {"tool": "bash", "id": "t2", "input": {"command": "exit 4"}},
                {
                    "tool": "bash",
                    "id": "t3",
                    "input": {"command": "sleep 0.2; exit 3", "background": True},
                },
            ],
            [{"text": "All done."}],
        ],
    )
    trace, args = witnessed_replay(tmp_path, scenario)
    done = metis(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return trace


def test_a_real_failing_background_job_agrees_and_recorded_ok_is_trace_3(tmp_path: Path) -> None:
    require_strace()
    trace = _failing_job_run(tmp_path)
    witness = trace.with_name("trace.jsonl.witness")
    exits = [r for s in sessions(witness) for r in s.records if isinstance(r, ProcessExit)]
    assert {3, 4} <= {x.status for x in exits}
    report = witness_check(trace)
    assert report.ok, report.violations
    assert report.checks["TRACE-3"] == 3  # echo ok, exit 4 error, the job's exit 3 error
    _header, events = read_trace(trace.read_text().splitlines())
    (done,) = [e for e in events if isinstance(e, JobDone)]
    assert done.outcome.value == "error"
    # The runtime's word doctored: the failed job recorded `ok`. The trace alone conforms.
    doctored = tmp_path / "doctored" / "trace.jsonl"
    doctored.parent.mkdir()
    lines = trace.read_text().splitlines()
    lines[done.seq + 1] = done.model_copy(update={"outcome": EffectOutcome.OK}).model_dump_json()
    doctored.write_text("\n".join(lines) + "\n")
    alone = metis("conform", str(doctored), "--json", cwd=tmp_path)
    assert alone.returncode == 0, alone.stdout
    seen = metis("conform", str(doctored), "--witness", str(witness), "--json", cwd=tmp_path)
    assert seen.returncode == 1, seen.stdout
    out = json.loads(seen.stdout)
    (v,) = [v for v in out["violations"] if v["invariant"] == "TRACE-3"]
    assert "recorded ok" in v["message"] and "exited with status 3" in v["message"]


def test_a_version_1_witness_file_is_still_read() -> None:
    from metis_trace import read_witness

    header = '{"kind": "header", "format": "metis-witness", "version": 1, "pid": 1, "t": 1.0}'
    (session,) = read_witness([header, '{"kind": "ready", "t": 2.0}'])
    assert session.header.version == 1 and not session.header.watched
