"""What `metis plan` / `metis tasks` do, called as the runtime's functions
(`metis_runtime.plan._commands`, `_provider`): each bad input is a
`ConfigError` naming the place, which the CLI prints as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metis_runtime import ConfigError
from metis_runtime.plan import DEFAULT_SCENARIO
from metis_runtime.plan import PLAN_SCENARIOS
from metis_runtime.plan import TurnProvider
from metis_runtime.plan import cache_listing
from metis_runtime.plan import last_dialog
from metis_runtime.plan import provider_name
from metis_runtime.plan import read_framework
from metis_runtime.plan import scenario_path
from metis_runtime.plan import seed_workspace
from metis_runtime.plan import set_feedback
from metis_runtime.plan import task_rows

from .test_cli_plan import metis


def test_the_provider_is_the_given_one_else_the_keyed_one_else_replay() -> None:
    assert provider_name("openai", {"ANTHROPIC_API_KEY": "k"}) == "openai"
    assert provider_name(None, {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}) == "anthropic"
    assert provider_name(None, {"OPENAI_API_KEY": "k"}) == "openai"
    assert provider_name(None, {}) == "replay"


def test_scenarios_by_name_or_file(tmp_path: Path) -> None:
    assert scenario_path(DEFAULT_SCENARIO) == PLAN_SCENARIOS / "notes.yaml"
    with pytest.raises(ConfigError, match=r"--scenario 'nope': no such plan scenario \(shipped: "):
        scenario_path("nope")
    with pytest.raises(ConfigError, match="one of replay, anthropic, openai"):
        TurnProvider("bogus", None, DEFAULT_SCENARIO, tmp_path)


def test_a_replay_seeds_only_what_the_workspace_lacks(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "2025-01-06-standup.md").write_text("kept")
    chosen = TurnProvider("replay", None, DEFAULT_SCENARIO, tmp_path)
    assert not chosen.live and chosen.start == 0
    assert (tmp_path / "notes" / "2025-01-06-standup.md").read_text() == "kept"
    assert (tmp_path / "notes" / "2025-01-07-design.md").is_file()
    chosen.done(tmp_path)  # nothing used: the next turn starts where this one did
    assert TurnProvider("replay", None, DEFAULT_SCENARIO, tmp_path).start == 0


def test_a_seed_that_cannot_be_written_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a folder should be")
    with pytest.raises(ConfigError, match=r"blocker/x.md: cannot write"):
        seed_workspace(tmp_path, {"blocker/x.md": "text"})


def test_no_waiting_dialog_and_no_finished_turn_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no dialog of alice is waiting for an answer"):
        last_dialog(tmp_path, "alice")
    with pytest.raises(ConfigError, match="no finished turn 'missing'"):
        set_feedback(tmp_path, "missing", True)
    out = metis("plan", "resume", "last", "--approve", "--workspace", str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.strip().startswith("metis plan resume: error: ") and "no dialog" in out.stderr


def test_a_framework_file_is_read_strictly(tmp_path: Path) -> None:
    bad = tmp_path / "fw.json"
    bad.write_text('{"steps": [')
    with pytest.raises(ConfigError, match=r"fw\.json"):
        read_framework(bad)
    bad.write_text(json.dumps({"steps": "not a list"}))
    with pytest.raises(ConfigError, match=r"fw\.json: "):
        read_framework(bad)


def test_the_cache_and_the_tasks_of_an_empty_workspace(tmp_path: Path) -> None:
    bumped, epoch, rows = cache_listing(tmp_path, bump_epoch=False)
    assert bumped is None and rows == []
    bumped, after, _ = cache_listing(tmp_path, bump_epoch=True)
    assert bumped == after == epoch + 1
    assert task_rows(tmp_path, None) == []


def test_the_cli_default_scenario_is_the_runtimes() -> None:
    from metis_cli import _plan

    assert _plan.DEFAULT_SCENARIO == DEFAULT_SCENARIO
