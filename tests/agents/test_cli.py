"""`metis agents list|conform`, `metis ablate child-boundary`, the guard options."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from metis_cli._agents import ablate
from metis_cli._agents import agents
from metis_cli._agents import budget_from_options
from metis_cli._agents import context_options
from metis_cli._agents import guard_options
from metis_cli._agents import limits_from_options
from metis_runtime.agents import GuardLimits
from metis_runtime.context import ContextBudget
from metis_trace import dumps_trace
from tests.model.test_spawn_guard_tree import valid_tree

from ._support import child_env


def test_ablate_child_boundary_shows_each_protections_effect() -> None:
    result = CliRunner().invoke(ablate, ["child-boundary", "--seeds", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["ok"] and data["escape_tools"] == ["bash", "edit", "glob", "grep", "spawn_agent"]
    cells = {(c["cloned_gate"], c["filtered_registry"]): c for c in data["cells"]}
    # Full protection: the effect is blocked and no escape tool is exposed.
    assert cells[(True, True)]["effect_admitted"] == 0 and cells[(True, True)]["exposed"] == [
        0,
        0,
        0,
    ]
    # No protection: the effect happens and all five are exposed.
    assert cells[(False, False)]["effect_admitted"] == 3 and cells[(False, False)]["exposed"] == [
        5,
        5,
        5,
    ]
    # Each protection alone: the gate blocks the effect, the filter hides the tools.
    assert cells[(True, False)]["effect_admitted"] == 0 and cells[(True, False)]["exposed"] == [
        5,
        5,
        5,
    ]
    assert cells[(False, True)]["effect_admitted"] == 3 and cells[(False, True)]["exposed"] == [
        0,
        0,
        0,
    ]
    # Exposed escape tools really run when nothing filters them.
    assert "bash" in cells[(False, False)]["escapes_ran"][0]


def test_ablate_child_boundary_table() -> None:
    result = CliRunner().invoke(ablate, ["child-boundary", "--seeds", "1"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["cloned", "gate", "filtered", "registry"]
    assert sum(line.rstrip().endswith("ok") for line in lines) == 4


@pytest.mark.slow
def test_ablate_child_boundary_with_real_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in child_env().items():
        monkeypatch.setenv(k, v)
    result = CliRunner().invoke(ablate, ["child-boundary", "--seeds", "1", "--processes", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["ok"]


def test_agents_list_reports_a_bad_file_and_exits_1(tmp_path: Path) -> None:
    folder = tmp_path / ".metis" / "agents"
    folder.mkdir(parents=True)
    (folder / "ok.md").write_text("---\nname: mine\ndescription: d\n---\nbody\n")
    (folder / "bad.md").write_text("---\nname: x\n---\n")
    runner = CliRunner()
    result = runner.invoke(
        agents, ["list", "--project", str(tmp_path), "--user-dir", str(tmp_path / "u"), "--json"]
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert "mine" in {a["name"] for a in data["agents"]}
    assert data["problems"] == [f"{folder / 'bad.md'}: description: Field required"]
    (tmp_path / "none").mkdir()  # an existing project with no agents (a missing one: exit 2)
    clean = runner.invoke(
        agents, ["list", "--project", str(tmp_path / "none"), "--user-dir", str(tmp_path / "u")]
    )
    assert clean.exit_code == 0 and "coordinator" in clean.output


def _write_tree(root: Path, tree: dict[str, Any]) -> None:
    for name, (header, events) in tree.items():
        path = root / name.replace(".jsonl", "") / "trace.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps_trace(header, events))


def test_agents_conform_checks_a_tree(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    _write_tree(good, valid_tree())
    tree = valid_tree()
    header, events = tree["a3.jsonl"]
    tree["a3.jsonl"] = (header.model_copy(update={"depth": 5}), events)
    _write_tree(bad, tree)
    runner = CliRunner()
    ok = runner.invoke(agents, ["conform", str(good)])
    assert ok.exit_code == 0 and "4 traces conform as one tree" in ok.output
    broken = runner.invoke(agents, ["conform", str(bad), "--json"])
    assert broken.exit_code == 1
    assert {v["invariant"] for v in json.loads(broken.output)["violations"]} >= {
        "CHILD-5",
        "CHILD-4",
    }
    (good / "junk").mkdir()
    (good / "junk" / "trace.jsonl").write_text("not json\n")
    assert runner.invoke(agents, ["conform", str(good)]).exit_code == 2
    assert runner.invoke(agents, ["conform", str(tmp_path / "good" / "junk" / "..")]).exit_code == 2


def _command_keeping(
    options: Callable[[click.Command], click.Command], make: Callable[[dict[str, Any]], Any]
) -> tuple[click.Command, list[Any]]:
    """A command with `options`, and the list of what `make` built from them at each
    call (`make` takes every option it is given)."""
    seen: list[Any] = []

    @click.command()
    @options
    def cmd(**values: Any) -> None:
        seen.append(make(values))
        assert values == {}

    return cmd, seen


def test_guard_options_make_limits() -> None:
    cmd, seen = _command_keeping(guard_options, limits_from_options)
    runner = CliRunner()
    assert runner.invoke(cmd, []).exit_code == 0
    assert (
        runner.invoke(
            cmd, ["--max-spawn-depth", "2", "--max-concurrent", "1", "--agent-timeout", "9.5"]
        ).exit_code
        == 0
    )
    assert seen == [GuardLimits(), GuardLimits(max_depth=2, max_concurrent=1, timeout_s=9.5)]
    assert runner.invoke(cmd, ["--agent-timeout", "0"]).exit_code == 2


def test_context_options_make_a_budget() -> None:
    cmd, seen = _command_keeping(context_options, budget_from_options)
    assert (
        CliRunner().invoke(cmd, ["--context-window", "1000", "--context-recent", "2"]).exit_code
        == 0
    )
    assert seen == [ContextBudget.for_window(1000, recent=2)]
    assert seen[0].prune_at == 500 and seen[0].compaction_at == 900


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--routing", '{"order": NaN}'], "--routing: line 1: order: NaN is not a JSON number"),
        (["--routing", '{"order": []} x'], "--routing: line 1: not valid JSON (extra data"),
        (["--routing", "[1]"], "--routing: must be a JSON object"),
        (["--header", "X-Title"], "--header 'X-Title': expected NAME=VALUE"),
        (["--header", "Authorization=Bearer x"], "--header 'Authorization' is set by metis"),
        (["--header", "x-api-key=k"], "--header 'x-api-key' is set by metis"),
        (["--base-url", "ftp://h"], "--base-url 'ftp://h': expected an http:// or https:// URL"),
    ],
)
def test_bad_wire_options_are_one_line_usage_errors(option: list[str], says: str) -> None:
    result = CliRunner().invoke(
        agents, ["list", "--provider", "anthropic", *option], standalone_mode=False
    )
    # `metis` prints a UsageError as one line, exit 2 (`metis_cli._main.main`).
    assert isinstance(result.exception, click.UsageError)
    message = result.exception.format_message()
    assert says in message and len(message.splitlines()) == 1


def test_a_refused_header_message_survives_the_redactor() -> None:
    # `metis` redacts everything it prints: "Authorization: ..." would read as
    # that header's value and print as [REDACTED], hiding why it was refused.
    from metis_runtime.providers import header_problem
    from metis_trace import find_credentials

    for name in ("Authorization", "Proxy-Authorization", "x-api-key", "Cookie"):
        problem = header_problem(name, "v")
        assert problem is not None and find_credentials(f"--header {problem}") == []
