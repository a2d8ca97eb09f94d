"""`metis explore` on the command line: options, bad input, JSON, --replay."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._explore import explore
from metis_studies.explore import MECH_REQUIRED
from metis_studies.explore import REQUIRED
from metis_studies.explore import write_scenario
from tests.explore._workloads import ONE_EDIT


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(explore, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--runs", "0"], "--runs 0: must be a positive integer"),
        (["--budget", "-1"], "--budget -1: must be positive"),
        (["--seed", "-2"], "--seed -2: must be 0 or more"),
        (["--runs", "many"], "'many' is not a valid integer"),
        (["--execution", "remote"], "'remote' is not one of"),
        (["--replay", "no-such-file.json"], "--replay no-such-file.json: no such file"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    code, _, err = _invoke(*args, "--out", str(tmp_path / "out"))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in err, err


def test_a_malformed_workload_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"name": "x", "turns": [{"calls": [{"id": "a", "tool": "ls"}]}]}))
    code, _, err = _invoke("--replay", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2 and err.count("\n") == 1
    assert "turns: " in err and "last turn must be an answer" in err
    bad.write_text("{not json")
    code, _, err = _invoke("--replay", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2 and "line 1: not valid JSON" in err


def test_a_short_exploration_reports_json_and_exits_0(tmp_path: Path) -> None:
    code, out, _ = _invoke(
        "--runs",
        "3",
        "--seed",
        "5",
        "--execution",
        "in-process",
        "--out",
        str(tmp_path / "out"),
        "--json",
    )
    summary = json.loads(out)
    assert code == 0, summary
    assert summary["workloads"] == 3 and summary["events"] > 0
    assert summary["workloads_per_minute"] > 0 and "divergence" not in summary
    assert set(summary["never"]) <= {*REQUIRED, *MECH_REQUIRED}  # what three runs did not reach
    assert not [p for p in (tmp_path / "out").iterdir() if p.name != "divergence"]


def test_replay_runs_a_written_scenario(tmp_path: Path) -> None:
    write_scenario(ONE_EDIT, tmp_path / "s" / "scenario.yaml")
    for execution in ("in-process", "metis-run"):
        code, out, _ = _invoke(
            "--replay",
            str(tmp_path / "s" / "scenario.yaml"),
            "--execution",
            execution,
            "--out",
            str(tmp_path / execution),
        )
        assert code == 0 and "one-edit: conforms" in out, out
    assert (tmp_path / "metis-run" / "replay" / "ws" / "a.txt").read_text() == "two\n"


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("deep.json", "[" * 5000 + "]" * 5000, "nested deeper than"),
        ("deep.yaml", "explore: " + "[" * 5000, "not valid YAML"),
        ("coerced.json", '{"name": "x", "turns": [{"overflow": "yes"}]}', "turns.0.overflow"),
        ("number.json", '{"name": 5, "turns": []}', "name: Input should be a valid string"),
        ("nan.json", '{"name": "x", "turns": [], "seed": NaN}', "NaN is not a JSON number"),
        ("latin1.json", b'{"name": "\xe9"}', "not UTF-8"),
        ("scenario.yaml", "version: 1\n", "explore: missing"),
    ],
)
def test_an_adversarial_workload_file_is_one_line_naming_it(
    name: str, content: str | bytes, says: str, tmp_path: Path
) -> None:
    """`--replay` reads as every metis reader does: bounded nesting, strict types
    (no coercion), strict UTF-8 and JSON (the old reader raised RecursionError on
    deep nesting and coerced nothing but accepted FIFOs as 'no such file')."""
    bad = tmp_path / name
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, _, err = _invoke("--replay", str(bad), "--out", str(tmp_path / "out"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"--replay {bad}" in lines[0] and says in lines[0], lines[0]


def test_a_workload_that_is_no_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "w.json"
    os.mkfifo(fifo)
    (tmp_path / "d.json").mkdir()
    for path, kind in (
        (fifo, "a FIFO"),
        (tmp_path / "d.json", "a directory"),
        (Path("/dev/zero"), "a character device"),
    ):
        code, _, err = _invoke("--replay", str(path), "--out", str(tmp_path / "out"))
        assert code == 2 and f"--replay {path}: not a regular file ({kind})" in err, err


def test_a_workload_on_stdin_is_named_dash_in_its_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        explore, ["--replay", "-", "--out", str(tmp_path / "out")], input='{"name": 5}'
    )
    assert result.exit_code == 2 and "--replay -: name: Input should be" in result.stderr, (
        result.stderr
    )
    assert not list((tmp_path / "out").glob(".replay-stdin-*"))
