"""The agent's own tools may not change `.metis/` (settings, agent
definitions, runs) nor the run's own files wherever the trace is; a child
working in a worktree under the parent's `.metis/runs/` may change its own
files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import is_protected
from metis_trace import Mode
from metis_trace import ToolKind
from tests.runtime.test_loop_support import replay_run_argv
from tests.runtime.test_loop_support import write_scenario


def _protected(gate: Gate, path: Path) -> bool:
    return gate.decide("write", {"path": str(path)}, ToolKind.EDIT, (path,)).facts.protected


def test_metis_folder_and_the_runs_files_are_protected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    trace = tmp_path / "elsewhere" / "run.jsonl"
    gate = Gate(
        Policy(),
        Mode.BYPASS,
        ws,
        protected_paths=(trace, tmp_path / "elsewhere" / "run.jsonl.agents"),
    )
    for rel in (
        ".metis/agents/evil.md",
        ".metis/runs/r1/trace.jsonl",
        ".metis/settings.json",
        ".metis/x",
        "sub/.metis/agents/a.md",
    ):
        assert _protected(gate, ws / rel), rel
    for path in (trace, trace.with_name("run.jsonl.agents") / "agents" / "c1" / "trace.jsonl"):
        assert _protected(gate, path), path
    assert not _protected(gate, ws / "src" / "app.py")
    assert not _protected(gate, ws / "metis" / "x.md")
    # A child's worktree under the parent's runs: its own files are its to change.
    child_ws = ws / ".metis" / "runs" / "r1" / "worktrees" / "c1"
    child_ws.mkdir(parents=True)
    child = Gate(Policy(), Mode.BYPASS, child_ws)
    assert not _protected(child, child_ws / "src" / "app.py")
    assert _protected(child, ws / ".metis" / "agents" / "evil.md")
    assert is_protected(child_ws / "x.py")  # without the workspace: by every part


def test_an_agent_cannot_forge_its_runs_or_plant_agent_definitions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".metis" / "runs" / "old").mkdir(parents=True)
    turns = [
        [
            {
                "tool": "write",
                "id": "t1",
                "input": {"path": ".metis/agents/evil.md", "content": "---\nname: evil\n---\n"},
            },
            {
                "tool": "write",
                "id": "t2",
                "input": {"path": ".metis/runs/old/trace.jsonl", "content": "{}"},
            },
            {
                "tool": "bash",
                "id": "t3",
                "input": {"command": "echo forged >> ../trace.jsonl.journal"},
            },
            {"tool": "write", "id": "t4", "input": {"path": "ok.txt", "content": "fine"}},
        ],
        [{"text": "done"}],
    ]
    scenario = write_scenario(tmp_path / "s.yaml", turns)
    trace = tmp_path / "trace.jsonl"
    done = subprocess.run(
        replay_run_argv(ws, scenario, "--trace", str(trace)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not (ws / ".metis" / "agents" / "evil.md").exists()
    assert not (ws / ".metis" / "runs" / "old" / "trace.jsonl").exists()
    assert not (tmp_path / "trace.jsonl.journal").read_text().endswith("forged\n")
    assert (ws / "ok.txt").read_text() == "fine"
    decisions = {}
    for line in trace.read_text().splitlines()[1:]:
        event = json.loads(line)
        if event["kind"] == "decision":
            decisions[event["occ"]] = (event["decision"], event["facts"]["protected"])
    # Bypass-immune: asked even in bypassPermissions, and headless asks are denied.
    assert decisions == {
        "1.0": ("ask", True),
        "1.1": ("ask", True),
        "1.2": ("ask", True),
        "1.3": ("allow", False),
    }
