"""`metis plan` and `metis tasks` as processes: the keyless scenario end to end,
and bad input as one line with exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from metis_trace import Route
from metis_trace import read_turn_log
from tests import _metis_cli

from ._runtime import REQUEST


def metis(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return _metis_cli.metis(*args, cwd=cwd, environ=_metis_cli.env(USER="alice"), timeout=300)


def test_the_keyless_scenario_end_to_end(tmp_path: Path) -> None:
    ws = str(tmp_path)
    first = metis("plan", "run", REQUEST, "--workspace", ws)
    assert first.returncode == 0, first.stderr
    assert "Paused" in first.stdout and "path engine: used" in first.stderr
    done = metis("plan", "resume", "last", "--workspace", ws, "--approve")
    assert done.returncode == 0, done.stderr
    assert "Wrote Reports/notes-summary.md" in done.stdout
    again = metis("plan", "run", REQUEST, "--workspace", ws, "--json")
    assert json.loads(again.stdout)["path"] == "L0"  # and it asks again: paused
    checked = metis("conform", str(tmp_path / ".metis" / "plan" / "turns"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_validate(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps({"steps": [{"tool": "read", "args": {"path": "a"}}, {"tool": "final_answer"}]})
    )
    assert metis("plan", "validate", str(good), "--workspace", str(tmp_path)).returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n- tool: read\n  args: {from_step: 2}\n- tool: nope\n")
    out = metis("plan", "validate", str(bad), "--workspace", str(tmp_path))
    assert out.returncode == 1
    assert "step 1: wrong_args" in out.stdout and "step 2: wrong_tool" in out.stdout


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"steps": [', "line 1"),
        ('{"steps": "read"}', "steps"),
        ('{"steps": [{"tool": "read", "args": {}}], "cap": 99}', "cap"),
        ('{"steps": [{"tool": 3}]}', "steps[0].tool"),
    ],
)
def test_a_malformed_framework_is_one_line_exit_2(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(text)
    out = metis("plan", "validate", str(path))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and where in lines[0], out.stderr


def test_a_malformed_dialog_is_one_line_exit_2(tmp_path: Path) -> None:
    dialog = tmp_path / "d1.json"
    dialog.write_text('{"format": "metis-dialog", "version": 1, "id": "d1"}')
    out = metis("plan", "resume", str(dialog), "--workspace", str(tmp_path), "--approve")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert str(dialog) in out.stderr and "turn_id" in out.stderr
    both = metis(
        "plan", "resume", str(dialog), "--workspace", str(tmp_path), "--approve", "--reject"
    )
    assert both.returncode == 2 and "exactly one of" in both.stderr


def test_tasks(tmp_path: Path) -> None:
    ws = str(tmp_path)
    vague = metis("tasks", "add", REQUEST, "--workspace", ws, "--schedule", "daily")
    assert vague.returncode == 2 and "missing the time of day" in vague.stderr
    added = metis(
        "tasks",
        "add",
        REQUEST,
        "--workspace",
        ws,
        "--schedule",
        "daily@08:00",
        "--owner",
        "carol",
        "--channel",
        "telegram",
    )
    assert added.returncode == 0, added.stderr
    fired = metis("tasks", "run-due", "--workspace", ws, "--now", "2099-01-01T08:30")
    assert fired.returncode == 0 and "paused (dialog" in fired.stdout, fired.stdout + fired.stderr
    listed = json.loads(metis("tasks", "list", "--workspace", ws, "--json").stdout)
    assert listed[0]["owner"] == "carol" and listed[0]["runs"][0]["outcome"].startswith("paused")
    (log,) = (tmp_path / ".metis" / "plan" / "turns").glob("*.jsonl")
    header, _, _ = read_turn_log(log.read_text().splitlines())
    # The firing is carol's turn with the task's authority, though alice ran run-due.
    assert (header.owner, header.actor, header.channel, header.route) == (
        "carol",
        "scheduler",
        "telegram",
        Route.BACKGROUND,
    )
    assert header.task is not None and header.task.owner == "carol"
    assert metis("conform", str(log)).returncode == 0


def test_an_ablation_counterexample_is_rejected_by_conform_with_its_id(tmp_path: Path) -> None:
    made = metis("counterexample", "--ablate", "resume-repeats-mutation", "--out", str(tmp_path))
    assert made.returncode == 1 and "PLAN-6 broken by" in made.stdout, made.stdout + made.stderr
    checked = metis("conform", str(tmp_path / "cex_resume_repeats_mutation.jsonl"), "--json")
    assert checked.returncode == 1
    assert json.loads(checked.stdout)["violations"][0]["invariant"] == "PLAN-6"
