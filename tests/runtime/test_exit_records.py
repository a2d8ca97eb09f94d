"""A bash call's exit status survives a SIGKILL of the runtime (RETRY-4).

A real `metis run` kills itself (`METIS_FAILPOINT`) between the bash process's
exit and the trace's commit; `metis run --resume` commits the call from its
exit record (`recovered`), answers it with the recorded exit status and
output, and never runs it again. Killed before the process ran, it stays
`unknown`."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

from metis_check import check_trace
from metis_runtime.tools._exits import ExitRecord
from metis_runtime.tools._exits import read_exit_record
from metis_runtime.tools._exits import write_exit_record
from metis_trace import Commit
from metis_trace import Repair
from metis_trace import ResultStatus
from metis_trace import read_trace
from tests.runtime.test_loop_support import metis_run
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import write_scenario

REPO = Path(__file__).resolve().parents[2]
# A GitHub classic token: the exit record goes through the redactor.
TOKEN = "ghp_" + "Z4x9Qw2Lk7Rt5Yb8Nm3Vc6Hj1Pd0Sf2Ga7Ke"
COMMAND = f"echo made >> out.txt; echo first-line; echo {TOKEN}; exit 3"


def _killed_at(tmp: Path, point: str) -> Path:
    turns = [[{"tool": "bash", "id": "b1", "input": {"command": COMMAND}}], [{"text": "done"}]]
    scenario = write_scenario(tmp / "s.yaml", turns)
    trace = tmp / "run" / "trace.jsonl"
    ws = ["--workspace", str(tmp / "ws"), "--mode", "bypassPermissions", "--headless"]
    args = [*ws, "--scenario", str(scenario), "--trace", str(trace)]
    killed = metis_run(*args, env={"METIS_FAILPOINT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    return trace


def _resumed(trace: Path) -> tuple[list[object], dict[str, tuple[str, str]]]:
    resumed = metis_run("--resume", "--trace", str(trace))
    assert resumed.returncode == 0, resumed.stderr
    with trace.open() as fh:
        header, events = read_trace(fh)
    report = check_trace(events, header)
    assert report.ok, report.first
    assert report.checks.get("RETRY-4", 0) >= 0
    return list(events), results_by_occ(events)


def test_a_call_that_finished_before_the_kill_is_answered_from_its_exit_record(
    tmp_path: Path,
) -> None:
    # Killed right before the trace's commit: the process has exited, its
    # outcome is in no trace and no journal, only in its exit record.
    trace = _killed_at(tmp_path, "trace:commit:1.0")
    record = tmp_path / "run" / "exits" / "1.0.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
    assert TOKEN not in record.read_text() and "first-line" in record.read_text()
    events, results = _resumed(trace)
    (commit,) = [e for e in events if isinstance(e, Commit)]
    assert commit.recovered and commit.occ == "1.0"
    (repair,) = [e for e in events if isinstance(e, Repair)]
    assert repair.recovered == ("1.0",) and repair.stubbed == () and repair.unknown == ()
    status, content = results["1.0"]
    assert status == ResultStatus.ERROR.value  # exit 3
    assert "exit status 3" in content and "first-line" in content and "[exit code: 3]" in content
    assert TOKEN not in trace.read_text()
    # Not run again: the effect happened once.
    assert (tmp_path / "ws" / "out.txt").read_text() == "made\n"
    journal = trace.with_name(trace.name + ".journal").read_text()
    assert '"type":"commit"' in journal.replace(" ", "") and TOKEN not in journal


def test_a_call_killed_before_its_process_ran_stays_unknown(tmp_path: Path) -> None:
    # Killed right after the admit was journaled: no exit record, so the
    # outcome is unknown (never reported as not run, never as recovered).
    trace = _killed_at(tmp_path, "journal:admit:1.0")
    assert not (tmp_path / "run" / "exits" / "1.0.json").exists()
    events, results = _resumed(trace)
    (repair,) = [e for e in events if isinstance(e, Repair)]
    assert repair.recovered == () and repair.unknown == ("1.0",)
    assert results == {}  # stubs are in the repair's results message, not results
    assert not any(isinstance(e, Commit) for e in events)


def test_unusable_exit_records_are_not_trusted(tmp_path: Path) -> None:
    write_exit_record(tmp_path, ExitRecord("2.1", 0, "ok\n[exit code: 0]", False))
    assert read_exit_record(tmp_path, "2.1") == ExitRecord("2.1", 0, "ok\n[exit code: 0]", False)
    assert read_exit_record(tmp_path, "2.2") is None  # none written
    (tmp_path / "3.0.json").write_text(
        '{"occ": "3.1", "exit_status": 0, "content": "", "is_error": false}'
    )
    assert read_exit_record(tmp_path, "3.0") is None  # another call's record
    (tmp_path / "3.2.json").write_text(
        '{"occ": "3.2", "exit_status": "0", "content": "", "is_error": false}'
    )
    assert read_exit_record(tmp_path, "3.2") is None  # a string is no exit status
    (tmp_path / "3.3.json").write_text('{"occ": "3.3", "exit_status": 0, "content": "x"')
    assert read_exit_record(tmp_path, "3.3") is None  # torn
    os.mkfifo(tmp_path / "3.4.json")
    assert read_exit_record(tmp_path, "3.4") is None  # never opened, never blocks
