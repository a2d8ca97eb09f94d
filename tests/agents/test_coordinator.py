"""End to end: a coordinator (scripted) spawns a planner and an implementer in
branch worktrees (real child processes); the guard refuses a duplicate and a
spawn past the depth limit; compaction runs; the whole tree conforms."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.agents import GuardLimits
from metis_runtime.context import ContextBudget
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_trace import Mode
from metis_trace import read_trace

from ._support import events_of
from ._support import git
from ._support import git_workspace
from ._support import make_root
from ._support import read_tree
from ._support import results
from ._support import spawn
from ._support import tree_report

pytestmark = pytest.mark.slow


def coordinator(request: ModelRequest, n: int) -> list[Any]:
    if n == 0:
        return [
            TextBlock("delegating"),
            spawn("c1", "planner", "Plan the feature", worktree="branch", permission_mode="plan"),
            spawn("c2", "implementer", "Implement the feature", worktree="branch"),
        ]
    if n == 1:
        # The same task again, spelled differently: a duplicate.
        return [spawn("c3", "planner", "  plan THE\n feature ", worktree="branch")]
    if n == 2:
        return [ToolUseBlock("c4", "list_agents", {})]
    return [TextBlock("all done")]


IMPLEMENTER = """---
name: implementer
description: the project's implementer, which may delegate reviews
tools: [read, write, edit, ls, bash, spawn_agent]
---
Implement what you are asked.
"""


def test_a_coordinator_run_with_children_conforms_as_a_tree(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    # A project definition overrides the built-in implementer (it may spawn).
    (ws / ".metis" / "agents").mkdir(parents=True)
    (ws / ".metis" / "agents" / "implementer.md").write_text(IMPLEMENTER)
    # depth 1: the children may not spawn; a tiny budget: the root compacts.
    budget = ContextBudget.for_window(400, recent=2)
    root = make_root(
        tmp_path,
        coordinator,
        workspace=ws,
        mode=Mode.ACCEPT_EDITS,  # the children inherit it: the implementer may write
        limits=GuardLimits(max_depth=1),
        budget=budget,
    )
    result = root.run("build the feature")
    assert result.status.value == "completed", result.error

    with (root.run_dir / "trace.jsonl").open() as fh:
        _, events = read_trace(fh)
    by_occ = results(events)

    # Both children completed in branch worktrees.
    assert by_occ["1.0"][0] == "ok" and "planner" in by_occ["1.0"][1]
    assert by_occ["1.1"][0] == "ok" and "completed" in by_occ["1.1"][1]
    # The duplicate was refused by the guard, as a value with its code.
    assert by_occ["2.0"][0] == "error"
    assert by_occ["2.0"][1].startswith("spawn refused: DUPLICATE_TASK_WARNING")
    spawns = [e for e in events if e.kind == "spawn"]
    assert len(spawns) == 2

    # The planner ran in plan mode without spawn_agent, read the snapshot's untracked file.
    p_header, p_events = events_of(root.run_dir, "planner")
    assert p_header.mode is Mode.PLAN and "spawn_agent" not in p_header.tools
    p_results = results(p_events)
    assert (
        p_results["1.0"] == ("ok", p_results["1.0"][1])
        and "new and untracked" in p_results["1.0"][1]
    )
    assert "unknown tool 'spawn_agent'" in p_results["1.1"][1]

    # The implementer saw the parent's uncommitted change, and was refused at depth 2.
    i_header, i_events = events_of(root.run_dir, "implementer")
    i_results = results(i_events)
    assert i_header.mode is Mode.ACCEPT_EDITS
    assert i_results["1.0"][0] == "ok"  # wrote feature.txt, in its own worktree
    assert "changed but not committed" in i_results["1.1"][1]
    assert i_results["2.0"][1].startswith("spawn refused: DEPTH_LIMIT")
    assert i_header.depth == 1 and i_header.parent_id == "root"

    # Compaction ran in the root and kept the transcript valid (the trace says so).
    steps = [e.step for e in events if e.kind == "compaction"]
    assert steps, "the root's tiny budget should have triggered context control"

    # The whole tree conforms, links included.
    tree = read_tree(root.run_dir)
    assert len(tree) == 3
    report = tree_report(root.run_dir)
    assert report.ok, report.violations
    assert report.checks["CHILD-5"] == 3 and report.checks["CHILD-4"] == 1
    assert report.checks["CHILD-1"] >= 4  # 2 spawn events + 2 tree links

    # Worktrees: kept for the parent, removed at its exit; the parent's tree untouched.
    assert not (root.workspace / "feature.txt").exists()
    worktrees = git(["worktree", "list"], root.workspace)
    assert worktrees.count("\n") == 1, worktrees  # only the main one is left
    assert "metis/" not in git(["branch"], root.workspace)


def test_the_parent_integrates_a_child_worktree(tmp_path: Path) -> None:
    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [spawn("c1", "implementer", "Implement the feature", worktree="branch")]
        return [TextBlock("done")]

    root = make_root(tmp_path, script, mode=Mode.ACCEPT_EDITS, limits=GuardLimits(max_depth=1))

    async def main() -> list[str]:
        try:
            result = await root.loop.run("go")
            assert result.status.value == "completed"
            (child,) = root.supervisor.children.values()
            assert child.status == "completed" and child.changed == ("feature.txt",)
            worktree = child.workspace.path
            assert (worktree / "feature.txt").read_text() == "implemented\n"
            changed = root.supervisor.integrate(child.agent_id)
            assert not worktree.exists()
            return changed
        finally:
            await root.supervisor.close()
            root.trace.close()

    changed = asyncio.run(main())
    assert changed == ["feature.txt"]
    assert (root.workspace / "feature.txt").read_text() == "implemented\n"
    # The parent's uncommitted change is still there, untouched.
    assert "changed but not committed" in (root.workspace / "tracked.txt").read_text()
    assert tree_report(root.run_dir).ok


def test_results_of_children_reach_the_coordinator(tmp_path: Path) -> None:
    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [spawn("c1", "reviewer", "Review tracked.txt")]
        last = request.messages[-1].content[0]
        assert isinstance(last, ToolResultBlock)
        return [TextBlock("reviewer said: " + last.content)]

    root = make_root(tmp_path, script)
    result = root.run("review")
    assert "ECHO" in result.text and "tracked.txt" in result.text
    assert tree_report(root.run_dir).ok
