"""`metis run` with sub-agents: the shipped coordinator scenario end to end (real
child processes in branch worktrees), the guard and context options, resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from metis_cli._agents import agents
from metis_cli._main import cli
from metis_runtime.assemble import child_provider
from metis_trace import Mode
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import read_trace
from tests._metis_cli import env as subprocess_env
from tests._procs import live_processes
from tests._procs import proc_file
from tests.runtime.test_loop_support import SLOW_MARKED_CALL
from tests.runtime.test_loop_support import invoke_run
from tests.runtime.test_loop_support import metis_run_argv
from tests.runtime.test_loop_support import one_line_error
from tests.runtime.test_loop_support import replay_run_argv
from tests.runtime.test_loop_support import resume_run
from tests.runtime.test_loop_support import sigint_when
from tests.runtime.test_loop_support import sigkill_when_marked
from tests.runtime.test_loop_support import write_scenario

from ._support import events_of
from ._support import git
from ._support import read_tree
from ._support import results
from ._support import tree_report

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_live_keys")]

REPO = Path(__file__).resolve().parents[2]
GREETER = 'def greet(name):\n    return "Hello " + name\n'


def _coordinator(ws: Path, *more: str) -> tuple[int, str, str]:
    return invoke_run("--scenario", "coordinator", "--workspace", str(ws), "--headless", *more)


def _run_dir(ws: Path) -> Path:
    (trace,) = (ws / ".metis" / "runs").glob("*/trace.jsonl")
    return trace.parent


def _root(run_dir: Path) -> tuple[TraceHeader, list[TraceEvent]]:
    with (run_dir / "trace.jsonl").open(encoding="utf-8") as fh:
        return read_trace(fh)


def test_the_coordinator_scenario_runs_and_its_tree_conforms(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    code, out, err = _coordinator(ws, "--mode", "acceptEdits")
    assert code == 0, err
    assert "refused by the spawn guard" in out
    run_dir = _run_dir(ws)
    assert f"agent tree: {run_dir}" in err

    # `metis agents conform RUN_DIR`: the three traces as one tree, CHILD-4..6 included.
    got = CliRunner().invoke(agents, ["conform", str(run_dir)])
    assert got.exit_code == 0, got.output
    assert "3 traces conform as one tree" in got.output
    report = json.loads(CliRunner().invoke(agents, ["conform", str(run_dir), "--json"]).output)
    assert report["checks"]["CHILD-5"] == 3 and report["checks"]["CHILD-4"] == 1

    header, events = _root(run_dir)
    assert "spawn_agent" in header.tools and header.meta["guard"]["max_depth"] == 5
    assert header.meta["guard"] == {
        "max_depth": 5,
        "max_total": 32,
        "max_per_parent": 8,
        "max_concurrent": 4,
        "timeout_s": 600.0,
    }
    by_occ = results(events)
    assert by_occ["1.0"][0] == by_occ["1.1"][0] == "ok"
    assert by_occ["1.0"][1].startswith("started agent planner-")
    assert by_occ["1.1"][1].startswith("started agent implementer-")
    # wait_agent brought both answers, the implementer's with the file it changed.
    status, waited = by_occ["2.0"]
    assert status == "ok" and "(planner) completed" in waited and "Plan: 1." in waited
    assert "(implementer) completed" in waited and "changed: src/greeter.py" in waited
    # The planner's task again: refused by the guard, as a value with its code.
    assert by_occ["3.0"][0] == "error"
    assert by_occ["3.0"][1].startswith("spawn refused: DUPLICATE_TASK_WARNING")
    assert len([e for e in events if e.kind == "spawn"]) == 2

    p_header, p_events = events_of(run_dir, "planner")
    assert p_header.mode is Mode.PLAN and "spawn_agent" not in p_header.tools
    assert p_header.parent_id == "root" and p_header.depth == 1
    assert all(status == "ok" for status, _ in results(p_events).values())

    # The implementer's edit landed in its own worktree, not in the workspace.
    i_header, i_events = events_of(run_dir, "implementer")
    assert i_header.mode is Mode.ACCEPT_EDITS
    assert Path(i_header.meta["workspace"]).is_relative_to(run_dir / "worktrees")
    i_results = results(i_events)
    assert i_results["2.0"] == ("ok", "edited src/greeter.py (1 occurrence replaced)")
    assert 'return f"Hello, {name}!"' in i_results["3.0"][1]
    assert (ws / "src" / "greeter.py").read_text() == GREETER
    # The run made the workspace a repository; the worktrees and branches are gone.
    assert "metis: the scenario's workspace" in git(["log", "--oneline"], ws)
    assert git(["status", "--porcelain"], ws) == ""  # .metis/ is excluded
    assert git(["worktree", "list"], ws).count("\n") == 1
    assert "metis/" not in git(["branch"], ws)


def test_default_mode_denies_the_childs_edit_and_still_conforms(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    code, _, err = _coordinator(ws, "-q")  # mode default: the children inherit it
    assert code == 0, err
    run_dir = _run_dir(ws)
    _, i_events = events_of(run_dir, "implementer")
    assert results(i_events)["2.0"][0] == "denied"
    assert tree_report(run_dir).ok


def test_guard_options_reach_the_guard(tmp_path: Path) -> None:
    # Depth 0: no child at all; both spawns are refused with DEPTH_LIMIT.
    ws = tmp_path / "depth"
    code, _, err = _coordinator(ws, "--mode", "acceptEdits", "-q", "--max-spawn-depth", "0")
    assert code == 0, err
    run_dir = _run_dir(ws)
    header, events = _root(run_dir)
    assert header.meta["guard"]["max_depth"] == 0
    by_occ = results(events)
    for occ in ("1.0", "1.1"):
        assert by_occ[occ][0] == "error"
        assert by_occ[occ][1].startswith("spawn refused: DEPTH_LIMIT: a child at depth 1")
    assert not [e for e in events if e.kind == "spawn"]
    assert len(read_tree(run_dir)) == 1 and tree_report(run_dir).ok

    # One agent in all (serial, so the planner comes first): the rest is TOTAL_LIMIT,
    # the duplicate too (total is checked before the duplicate task).
    ws = tmp_path / "total"
    code, _, err = _coordinator(
        ws, "--mode", "acceptEdits", "-q", "--serial", "--max-agents", "1", "--agent-timeout", "90"
    )
    assert code == 0, err
    run_dir = _run_dir(ws)
    header, events = _root(run_dir)
    assert header.meta["guard"]["max_total"] == 1 and header.meta["guard"]["timeout_s"] == 90
    by_occ = results(events)
    assert by_occ["1.0"][0] == "ok"
    assert by_occ["1.1"][1].startswith("spawn refused: TOTAL_LIMIT")
    assert by_occ["3.0"][1].startswith("spawn refused: TOTAL_LIMIT")
    assert json.loads((run_dir / "guard.json").read_text())["total"] == 1
    assert tree_report(run_dir).ok


def test_context_options_reach_the_ladder(tmp_path: Path) -> None:
    # A tiny window: the root's transcript is pruned/snipped/folded before requests.
    ws = tmp_path / "ws"
    code, _, err = _coordinator(
        ws, "--mode", "acceptEdits", "-q", "--context-window", "600", "--context-recent", "2"
    )
    assert code == 0, err
    run_dir = _run_dir(ws)
    _, events = _root(run_dir)
    assert [e for e in events if e.kind == "compaction"]
    # The children got the same budget.
    for child in (run_dir / "agents").iterdir():
        config = json.loads((child / "config.json").read_text())
        assert config["context_budget"]["window"] == 600
    assert tree_report(run_dir).ok


def test_ask_agent_tools_leaves_spawning_to_the_gate(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    code, _, err = _coordinator(ws, "--mode", "acceptEdits", "-q", "--ask-agent-tools")
    assert code == 0, err
    run_dir = _run_dir(ws)
    _, events = _root(run_dir)
    by_occ = results(events)
    assert by_occ["1.0"][0] == by_occ["1.1"][0] == "denied"  # headless: the ask is denied
    assert by_occ["2.0"] == ("ok", "no running sub-agents")  # wait_agent is read-only
    assert not (run_dir / "agents").exists()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-spawn-depth", "-1"),
        ("--max-agents", "many"),
        ("--max-children-per-agent", "-3"),
        ("--max-concurrent", "1.5"),
        ("--agent-timeout", "0"),
        ("--context-window", "0"),
    ],
)
def test_a_bad_guard_or_context_option_is_one_line_and_exit_2(
    tmp_path: Path, option: str, value: str
) -> None:
    ws = tmp_path / "ws"
    args = ["--workspace", str(ws), option, value]
    line = one_line_error(*invoke_run(*args)[::2])
    assert option in line
    # The same through the `metis` group.
    got = CliRunner().invoke(cli, ["run", *args], catch_exceptions=False)
    assert one_line_error(got.exit_code, got.stderr) == line
    assert not ws.exists()  # nothing was seeded


def test_a_scenario_naming_a_missing_child_cassette_is_bad_input(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "s.yaml", [[{"text": "hi"}]])
    data = yaml.safe_load(scenario.read_text())
    data["agents"] = {"planner": "nowhere.yaml"}
    scenario.write_text(yaml.safe_dump(data))
    line = one_line_error(
        *invoke_run("--workspace", str(tmp_path / "ws"), "--scenario", str(scenario))[::2]
    )
    assert "agents['planner']" in line and "nowhere.yaml" in line


def test_live_children_use_the_runs_provider_and_model() -> None:
    cfg = child_provider({"provider": "anthropic", "model": None})
    assert cfg.kind == "anthropic" and cfg.model == "claude-sonnet-4-5"
    cfg = child_provider({"provider": "openai", "model": "gpt-x"})
    assert cfg.kind == "openai" and cfg.model == "gpt-x"
    cfg = child_provider({"provider": "replay", "agent_scenarios": {"planner": "/p.yaml"}})
    assert cfg.kind == "replay" and cfg.scenarios == {"planner": "/p.yaml"}


# --- resume: a root killed with SIGKILL after a child ran, then resumed ----------------


def _scenario_with_child(tmp_path: Path) -> Path:
    task = "Write done.txt"
    child = write_scenario(
        tmp_path / "child.yaml",
        [
            [{"tool": "write", "id": "w1", "input": {"path": "done.txt", "content": "done\n"}}],
            [{"text": "wrote done.txt"}],
        ],
    )
    spawn: dict[str, Any] = {"agent": "implementer", "task": task, "worktree": "branch"}
    root = write_scenario(
        tmp_path / "root.yaml",
        [
            [{"tool": "spawn_agent", "id": "s1", "input": spawn}],
            [
                {
                    "tool": "bash",
                    "id": "b1",
                    "input": {"command": SLOW_MARKED_CALL},
                }
            ],
            [{"tool": "spawn_agent", "id": "s2", "input": spawn}],
            [{"text": "All done."}],
        ],
        files={"README.md": "hi\n"},
    )
    data = yaml.safe_load(root.read_text())
    data["agents"] = {"implementer": child.name}
    data["workspace"]["git"] = True
    root.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def test_resume_after_sigkill_keeps_the_agent_tools_and_the_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scenario = _scenario_with_child(tmp_path)
    env = subprocess_env()
    sigkill_when_marked(
        replay_run_argv(ws, scenario),
        env,
        tmp_path,
        ws / "started.marker",
        timeout=120,
    )
    run_dir = _run_dir(ws)
    done = resume_run(run_dir / "trace.jsonl", env, tmp_path)
    assert "All done." in done.stdout
    header, events = _root(run_dir)
    assert "spawn_agent" in header.tools
    by_occ = results(events)
    assert by_occ["1.0"][0] == "ok" and "changed: done.txt" in by_occ["1.0"][1]
    # The ledger survived the kill: the same task again is a duplicate after resume.
    assert by_occ["3.0"][1].startswith("spawn refused: DUPLICATE_TASK_WARNING")
    assert [e.kind for e in events].count("repair") == 1
    assert tree_report(run_dir).ok
    got = CliRunner().invoke(agents, ["conform", str(run_dir)])
    assert got.exit_code == 0, got.output


def _sleepers(arg: str) -> list[int]:
    """Live processes running `sleep ARG`."""
    argv = [b"sleep", arg.encode()]
    return [
        pid for pid, _ in live_processes() if proc_file(pid, "cmdline").split(b"\0")[:2] == argv
    ]


def test_ctrl_c_kills_the_running_children_and_the_run_resumes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    nap = f"60.{uuid.uuid4().int % 10**9}"  # names the child's tool process
    child = write_scenario(
        tmp_path / "child.yaml",
        [
            [
                {
                    "tool": "bash",
                    "id": "c1",
                    "input": {"command": f"touch child.marker; sleep {nap}"},
                }
            ],
            [{"text": "slept"}],
        ],
    )
    spawn = {"agent": "implementer", "task": "sleep", "mode": "async"}
    root = write_scenario(
        tmp_path / "root.yaml",
        [
            [{"tool": "spawn_agent", "id": "s1", "input": spawn}],
            [{"tool": "bash", "id": "b1", "input": {"command": "touch started.marker; sleep 60"}}],
            [{"text": "All done."}],
        ],
    )
    data = yaml.safe_load(root.read_text())
    data["agents"] = {"implementer": child.name}
    root.write_text(yaml.safe_dump(data, sort_keys=False))
    env = subprocess_env()
    argv = metis_run_argv(
        "--workspace", str(ws), "--scenario", str(root), "--mode", "bypassPermissions"
    )
    try:
        code, err = sigint_when(
            argv,
            env,
            tmp_path,
            lambda: (ws / "started.marker").exists() and bool(_sleepers(nap)),
            120,
            "the child or the slow call never started",
        )
    finally:
        leftover = _sleepers(nap)
        for pid in leftover:  # a failing run must not leave them behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert code == 1
    assert leftover == [], "the child's tool outlived the interrupted run"
    run_dir = _run_dir(ws)
    assert err.strip().splitlines()[-1] == (
        f"metis run: interrupted; resume with: metis run --resume --trace {run_dir / 'trace.jsonl'}"
    )
    assert "Traceback" not in err
    assert json.loads((run_dir / "guard.json").read_text())["running"] == {}
    _, events = _root(run_dir)
    assert "interrupt" in [e.kind for e in events]

    done = resume_run(run_dir / "trace.jsonl", env, tmp_path)
    assert "All done." in done.stdout
    assert tree_report(run_dir).ok


def test_children_inherit_the_runs_max_retries() -> None:
    from metis_runtime.agents import build_provider

    config = child_provider({"provider": "anthropic", "model": "m", "max_retries": 5})
    assert config.max_retries == 5
    info: Any = {"agent": "a", "agent_id": "x", "depth": 1, "task": "t", "workspace": "."}
    assert build_provider(config, info).retry.max_retries == 5  # type: ignore[attr-defined]
    # Journals from before --max-retries: the default.
    assert child_provider({"provider": "openai"}).max_retries == 2
