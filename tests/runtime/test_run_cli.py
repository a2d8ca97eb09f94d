"""`metis run` end to end: replay scenarios in temp workspaces, exit codes, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_runtime.providers import builtin_scenarios
from metis_runtime.providers import load_scenario
from tests.runtime.test_loop_support import assert_conforms
from tests.runtime.test_loop_support import invoke_run
from tests.runtime.test_loop_support import kinds
from tests.runtime.test_loop_support import of_kind
from tests.runtime.test_loop_support import one_line_error
from tests.runtime.test_loop_support import read
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import write_scenario

pytestmark = pytest.mark.usefixtures("no_live_keys")


def test_the_default_replay_scenario_edits_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    trace = tmp_path / "trace.jsonl"
    code, out, err = invoke_run(
        "--workspace", str(ws), "--mode", "acceptEdits", "--headless", "--trace", str(trace)
    )
    assert code == 0, err
    assert "Hello, <name>!" in out
    assert (
        ws / "src" / "greeter.py"
    ).read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'
    notes = (ws / "notes.txt").read_text()
    assert "src/cli.py: handle a missing name argument" in notes
    header, events = read(trace)
    assert_conforms(header, events)
    assert header.mode.value == "acceptEdits" and header.route.value == "headless"
    assert of_kind(events, "run_end")[0].status.value == "completed"
    assert [s.occs for s in of_kind(events, "results_sent")][2] == ("3.0", "3.1", "3.2", "3.3")
    assert all(status == "ok" for status, _ in results_by_occ(events).values())
    # progress: one line per call start and one per end, with tool and status
    assert "  > 3.3 edit " in err and "  < 3.3 edit ok " in err
    assert err.count("  > ") == err.count("  < ") == 8
    assert (trace.parent / "trace.jsonl.journal").exists()


def test_default_mode_headless_denies_edits_and_still_completes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    code, _, err = invoke_run("--workspace", str(ws), "--headless", "-q")
    assert code == 0, err
    assert 'return "Hello " + name' in (ws / "src" / "greeter.py").read_text()
    (trace,) = (ws / ".metis" / "runs").glob("*/trace.jsonl")  # the default trace place
    header, events = read(trace)
    assert_conforms(header, events)
    assert {e.resolver for e in of_kind(events, "ask_resolved")} == {"headless-default"}
    assert results_by_occ(events)["3.3"][0] == "denied"


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_every_shipped_scenario_runs_and_conforms(tmp_path: Path, name: str) -> None:
    trace = tmp_path / "t.jsonl"
    code, _, err = invoke_run(
        "--workspace",
        str(tmp_path / "ws"),
        "--scenario",
        name,
        "--mode",
        "bypassPermissions",
        "--headless",
        "--trace",
        str(trace),
        "-q",
    )
    assert code == 0, err
    assert_conforms(*read(trace))


def test_max_turns_fails_the_run_with_exit_1(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    code, _, err = invoke_run(
        "--workspace", str(tmp_path / "ws"), "--max-turns", "2", "--headless", "--trace", str(trace)
    )
    assert code == 1
    assert "run failed after 2 turn(s)" in err and "Traceback" not in err
    header, events = read(trace)
    assert_conforms(header, events)
    assert kinds(events)[-1] == "run_end" and events[-1].status.value == "failed"


def test_replay_exhausted_is_a_failed_run(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "short.yaml", [[{"tool": "ls", "id": "a", "input": {}}]])
    trace = tmp_path / "t.jsonl"
    code, _, err = invoke_run(
        "--workspace",
        str(tmp_path / "ws"),
        "--scenario",
        str(scenario),
        "--headless",
        "--trace",
        str(trace),
        "-q",
    )
    assert code == 1 and "replay exhausted" in err
    assert_conforms(*read(trace))


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    line = one_line_error(*invoke_run("--workspace", str(ws), "--mode", "yolo")[::2])
    assert "--mode 'yolo'" in line
    line = one_line_error(*invoke_run("--workspace", str(ws), "--provider", "gemini")[::2])
    assert "--provider 'gemini'" in line
    line = one_line_error(*invoke_run("--workspace", str(ws), "--scenario", "nope")[::2])
    assert "no such scenario" in line
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions: [1, 2\n")
    line = one_line_error(*invoke_run("--workspace", str(ws), "--scenario", str(bad))[::2])
    assert str(bad) in line and "line" in line
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    line = one_line_error(*invoke_run("--workspace", str(a_file))[::2])
    assert "not a directory" in line
    line = one_line_error(*invoke_run("--max-turns", "0", "--workspace", str(ws))[::2])
    assert "--max-turns" in line
    line = one_line_error(*invoke_run("--resume")[::2])
    assert "--resume needs --trace" in line
    line = one_line_error(*invoke_run("--resume", "--trace", str(tmp_path / "none.jsonl"))[::2])
    assert "none.jsonl" in line


def test_seeding_refuses_to_overwrite_a_different_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "greeter.py").write_text("mine\n")
    line = one_line_error(*invoke_run("--workspace", str(ws), "--headless")[::2])
    assert "greeter.py" in line and "refusing to overwrite" in line
    assert (ws / "src" / "greeter.py").read_text() == "mine\n"
    assert not (ws / "README.md").exists()  # nothing half-seeded


def test_seeding_accepts_identical_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    files = load_scenario(builtin_scenarios()["edit_files"]).workspace_files
    for name, content in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(content)
    code, _, err = invoke_run("--workspace", str(ws), "--headless", "-q")
    assert code == 0, err


def test_an_existing_trace_is_not_overwritten(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("keep me\n")
    line = one_line_error(
        *invoke_run("--workspace", str(tmp_path / "ws"), "--trace", str(trace))[::2]
    )
    assert "already exists" in line and trace.read_text() == "keep me\n"


def test_resume_of_a_completed_run_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    code, _, _ = invoke_run(
        "--workspace", str(tmp_path / "ws"), "--headless", "--trace", str(trace), "-q"
    )
    assert code == 0
    line = one_line_error(*invoke_run("--resume", "--trace", str(trace))[::2])
    assert "already ended (completed)" in line


def test_a_live_provider_needs_a_task(tmp_path: Path) -> None:
    line = one_line_error(
        *invoke_run("--workspace", str(tmp_path / "ws"), "--provider", "anthropic")[::2]
    )
    assert "TASK is required" in line


def test_serial_and_four_class_dispatch_give_the_same_files(tmp_path: Path) -> None:
    contents = []
    for flag in ("--serial", None):
        ws = tmp_path / (flag or "four")
        trace = tmp_path / f"{flag or 'four'}.jsonl"
        args = ["--workspace", str(ws), "--mode", "acceptEdits", "--headless", "-q"]
        code, _, err = invoke_run(*args, "--trace", str(trace), *([flag] if flag else []))
        assert code == 0, err
        assert_conforms(*read(trace))
        contents.append(((ws / "notes.txt").read_text(), (ws / "src" / "greeter.py").read_text()))
    assert contents[0] == contents[1]


def test_json_prints_the_run_summary_and_nothing_else(tmp_path: Path) -> None:
    import json

    ws, trace = tmp_path / "ws", tmp_path / "trace.jsonl"
    code, out, err = invoke_run(
        "--workspace",
        str(ws),
        "--mode",
        "acceptEdits",
        "--headless",
        "--trace",
        str(trace),
        "--json",
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["status"] == "completed" and summary["exit"] == 0
    assert "Hello, <name>!" in summary["text"]
    assert summary["calls"] == 8 and summary["results"] == {"ok": 8}
    assert summary["trace"] == str(trace) and summary["agent_tree"] is None
    header, events = read(trace)
    assert summary["run_id"] == header.run_id and summary["events"] == len(events)
    assert "  > " not in err  # --json implies -q
