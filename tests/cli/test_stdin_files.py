"""`-` is standard input where a file is read (issue 14): `metis run --scenario -`
and `metis explore --replay -`, through the same bounded reader as every
file; `--trace -`, a file a run writes and appends to, is a one-line error."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._explore import explore
from metis_cli._main import cli
from metis_runtime.providers import builtin_scenarios
from metis_studies.explore import write_scenario
from tests.explore._workloads import ONE_EDIT


def _one_line_error(output: str, says: str) -> None:
    lines = output.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in output, output


def test_run_reads_its_scenario_from_stdin_and_keeps_it_for_resume(tmp_path: Path) -> None:
    text = builtin_scenarios()["edit_files"].read_text()
    ws = tmp_path / "ws"
    done = CliRunner().invoke(
        cli, ["run", "--workspace", str(ws), "--scenario", "-", "--headless", "--json"], input=text
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert summary["status"] == "completed"
    trace = Path(summary["trace"])
    kept = trace.parent / "scenario.yaml"  # what a resume (or the witness's run) reads
    assert kept.read_text() == text
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    journal = Path(summary["journal"]).read_text().splitlines()
    assert json.loads(journal[0])["config"]["scenario"] == str(kept)
    assert (ws / "src" / "greeter.py").is_file()  # the scenario's files were seeded


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        ("nonsense: [", "<stdin>: line 2: not valid YAML"),
        ("interactions: 3", "<stdin>: interactions: must be a list"),
        ("", "<stdin>"),
    ],
)
def test_a_bad_scenario_on_stdin_is_one_line_exit_2(tmp_path: Path, stdin: str, says: str) -> None:
    args = ["run", "--workspace", str(tmp_path / "ws"), "--scenario", "-", "-q"]
    done = CliRunner().invoke(cli, args, input=stdin)
    assert done.exit_code == 2
    _one_line_error(done.output, says)


def test_run_refuses_a_trace_on_stdin_before_touching_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for extra in ([], ["--resume"]):
        done = CliRunner().invoke(cli, ["run", "--workspace", str(ws), "--trace", "-", *extra])
        assert done.exit_code == 2
        _one_line_error(done.output, "--trace -: a run writes its trace to a file")
    assert not ws.exists() or not any(ws.iterdir())


def test_explore_replays_a_workload_from_stdin_as_json_or_scenario_yaml(tmp_path: Path) -> None:
    write_scenario(ONE_EDIT, tmp_path / "scenario.yaml")
    inputs = {
        "json": json.dumps(ONE_EDIT.to_json()),
        "yaml": (tmp_path / "scenario.yaml").read_text(),
    }
    for kind, text in inputs.items():
        out = tmp_path / kind
        args = ["--replay", "-", "--execution", "in-process", "--out", str(out)]
        done = CliRunner().invoke(explore, args, input=text, catch_exceptions=False)
        assert done.exit_code == 0 and "one-edit: conforms" in done.stdout, done.output
        assert not [p for p in out.iterdir() if p.name.startswith(".replay-stdin")]
    bad = CliRunner().invoke(explore, ["--replay", "-", "--out", str(tmp_path / "b")], input="{x")
    assert bad.exit_code == 2
    _one_line_error(bad.stderr, "line 1: not valid JSON")
