"""The metis command: exit codes 0 / 1 / 2, one-line errors, JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_check import broken_trace
from metis_check import simulate
from metis_cli._main import cli
from metis_model import INVARIANTS
from metis_trace import dumps_trace

from ..smt.test_scope import assert_demo_proof_rows_state_their_scope


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_version_and_help(runner: CliRunner) -> None:
    assert runner.invoke(cli, ["--version"]).output.startswith("metis, version ")
    for command in ("spec", "conform", "check", "demo", "run", "permissions"):
        result = runner.invoke(cli, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, command


def test_spec_lists_every_invariant(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["spec", "--json"])
    assert result.exit_code == 0
    assert [row["id"] for row in json.loads(result.output)] == [i.id for i in INVARIANTS]
    assert runner.invoke(cli, ["spec", "--family", "nope"]).exit_code == 2


def test_conform_exit_codes(runner: CliRunner, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(dumps_trace(*simulate(5)))
    assert runner.invoke(cli, ["conform", str(good)]).exit_code == 0

    bad = tmp_path / "bad.jsonl"
    bad.write_text(dumps_trace(*broken_trace("AUTH-2", 1)))
    result = runner.invoke(cli, ["conform", str(bad), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["violations"][0]["invariant"] == "AUTH-2"
    assert report["violations"][0]["line"] >= 2

    malformed = tmp_path / "malformed.jsonl"
    lines = good.read_text().splitlines()
    lines[3] = '{"seq": 2, "kind": "nonsense"'
    malformed.write_text("\n".join(lines) + "\n")
    result = runner.invoke(cli, ["conform", str(malformed)])
    assert result.exit_code == 2
    assert "line 4" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1

    assert runner.invoke(cli, ["conform", str(tmp_path / "missing.jsonl")]).exit_code == 2


def test_conform_rejects_a_foreign_header(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "v9.jsonl"
    path.write_text('{"kind": "header", "format": "metis-trace", "version": 9}\n')
    result = runner.invoke(cli, ["conform", str(path)])
    assert result.exit_code == 2 and "unsupported trace version 9" in result.output


def test_check_reports_evidence_per_id(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["check", "--runs", "12", "--broken", "1", "--no-prove", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["ok"]
    assert payload["invariants"]["AUTH-1"]["caught"] == 1
    assert payload["invariants"]["AUTH-1"]["traces"] == 12
    assert payload["invariants"]["CLOSE-7"]["checks"] > 0  # from the bundled transcripts


def test_demo_runs_the_whole_story(runner: CliRunner, tmp_path: Path) -> None:
    # The explore sweep's rows are tested in tests/explore/test_demo_channel.py.
    argv = ["demo", "--runs", "6", "--no-explore", "--json", "--out", str(tmp_path)]
    result = runner.invoke(cli, argv)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    parts = {row["part"] for row in rows}
    assert {
        "runtime",
        "conformance",
        "witness",
        "agents",
        "plan path",
        "proofs",
        "faults",
        "transcripts",
        "oracle",
        "ablation",
        "model",
    } <= parts
    assert all(row["ok"] for row in rows)
    assert (tmp_path / "run.jsonl").exists() and (tmp_path / "workspace" / "notes.txt").exists()
    assert_demo_proof_rows_state_their_scope(rows)  # issue 25: every proof row says its reach


@pytest.mark.parametrize(
    "argv", [["conform"], ["nosuch"], ["spec", "--bogus"], ["check", "--runs", "x"]]
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str]) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "metis_cli", *argv], capture_output=True, text=True
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in done.stderr


@pytest.mark.metis_nonconforming  # it tampers with a recorded trace on purpose
def test_conform_checks_a_directory_as_one_tree_of_agents(
    runner: CliRunner, tmp_path: Path
) -> None:
    from metis_cli._demo import run_coordinator

    ws = tmp_path / "ws"
    ws.mkdir()
    done = run_coordinator(ws)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (ws / ".metis" / "runs").iterdir()
    ok = runner.invoke(cli, ["conform", str(run_dir), "--json"])
    assert ok.exit_code == 0, ok.output
    # A child that claims more authority than its parent breaks the tree (CHILD-2/5).
    child = next(p for p in run_dir.rglob("trace.jsonl") if p.parent != run_dir)
    lines = child.read_text().splitlines()
    header = json.loads(lines[0])
    header["mode"] = "bypassPermissions"
    child.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    bad = runner.invoke(cli, ["conform", str(run_dir), "--json"])
    assert bad.exit_code == 1
    assert json.loads(bad.output)["violations"][0]["invariant"].startswith("CHILD-")
