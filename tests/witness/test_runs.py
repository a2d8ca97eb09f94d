"""Real runs with the witness on conform: the shipped scenario, the coordinator
tree, and a resume after SIGKILL (the witness file then holds two sessions)."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path

import pytest

from metis_trace import Exec
from metis_trace import RunExited
from tests._metis_cli import env
from tests._metis_cli import metis
from tests.runtime.test_loop_support import write_scenario

from ._support import sessions
from ._support import witness_check


def test_the_shipped_scenario_is_witnessed_and_agrees(tmp_path: Path) -> None:
    trace = tmp_path / "run" / "trace.jsonl"
    args = ["--workspace", "ws", "--mode", "acceptEdits", "--headless", "--trace", str(trace)]
    done = metis("run", "Fix the greeting format", *args, "--witness", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    witness = trace.with_name("trace.jsonl.witness")
    assert stat.S_IMODE(witness.stat().st_mode) == 0o600
    report = witness_check(trace)
    assert report.ok, report.violations
    assert not [u for u in report.unobserved if "no witness watched" in u], report.unobserved
    changed = {c.path for s in sessions(witness) for c in s.records if c.kind == "change"}
    ws = (tmp_path / "ws").resolve()
    assert {str(ws / "src" / "greeter.py"), str(ws / "notes.txt")} <= changed
    assert report.checks["AUTH-1"] >= 2  # seeding came before the run: not judged
    execs = [r for s in sessions(witness) for r in s.records if isinstance(r, Exec)]
    if any(w.what == "exec" for w in sessions(witness)[0].header.watched):
        assert any(x.argv[1:] == ("-c", "wc -l notes.txt") for x in execs)
    conform = metis("conform", str(trace), "--json", cwd=tmp_path)
    assert conform.returncode == 0, conform.stdout
    out = json.loads(conform.stdout)
    assert out["ok"] and out["verdict"] == "conforms"
    summary = [w["message"] for w in out["warnings"] if w["message"].startswith("witness ")]
    assert summary and f"{report.changes} changes" in summary[0]


@pytest.mark.slow
def test_the_coordinator_tree_is_witnessed_and_agrees(tmp_path: Path) -> None:
    args = ["--scenario", "coordinator", "--workspace", "co", "--mode", "acceptEdits"]
    done = metis("run", *args, "--headless", "--witness", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    (trace,) = (tmp_path / "co" / ".metis" / "runs").glob("*/trace.jsonl")
    children = list(trace.parent.glob("agents/*/trace.jsonl"))
    assert len(children) >= 2
    report = witness_check(trace)
    assert report.ok, report.violations
    changed = [
        c.path
        for s in sessions(trace.with_name("trace.jsonl.witness"))
        for c in s.records
        if c.kind == "change"
    ]
    assert any("/worktrees/" in p for p in changed)  # the children's worktrees were watched
    conform = metis("conform", str(trace.parent), cwd=tmp_path)
    assert conform.returncode == 0, conform.stdout
    assert "conforms" in conform.stdout and "warning: witness " in conform.stdout


def test_a_resume_after_sigkill_is_witnessed_in_two_sessions_and_agrees(tmp_path: Path) -> None:
    scenario = write_scenario(
        tmp_path / "kill.yaml",
        [
            [
                {"text": "Counting."},
                {"tool": "bash", "id": "t1", "input": {"command": "echo ran >> count.txt"}},
                {"tool": "write", "id": "t2", "input": {"path": "w.txt", "content": "w"}},
            ],
            [{"tool": "write", "id": "t3", "input": {"path": "after.txt", "content": "a"}}],
            [{"text": "All done."}],
        ],
    )
    trace = tmp_path / "run" / "trace.jsonl"
    common = ["--workspace", "ws", "--trace", str(trace), "--mode", "bypassPermissions"]
    killed = metis(
        "run", *common, "--scenario", str(scenario), "-q", "--witness",
        cwd=tmp_path, environ=env(METIS_FAILPOINT="journal:commit:1.0"),
    )  # fmt: skip
    assert killed.returncode == 128 + signal.SIGKILL, killed.stderr
    resumed = metis("run", "--resume", "--trace", str(trace), "-q", "--witness", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "ws" / "count.txt").read_text() == "ran\n"
    first, second = sessions(trace.with_name("trace.jsonl.witness"))
    exit_ = next(r for r in first.records if isinstance(r, RunExited))
    assert exit_.signal == signal.SIGKILL and second.header.session == 1
    report = witness_check(trace)
    assert report.ok, report.violations
    assert not [u for u in report.unobserved if "no witness watched" in u], report.unobserved
    assert report.checks.get("RETRY-1", 0) >= 1  # changes after the resume were put to it
