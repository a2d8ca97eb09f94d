"""`worktree: auto` and `worktree: branch:<name>`: the choice, the refusals, a real spawn."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.agents import WorkspaceError
from metis_runtime.agents import WorkspaceKind
from metis_runtime.agents import make_workspace
from metis_runtime.agents import parse_worktree
from metis_runtime.agents import plan_workspace
from metis_runtime.agents import remove_workspace
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_trace import Mode
from metis_trace import read_trace

from ._support import git
from ._support import git_workspace
from ._support import make_root
from ._support import read_tree
from ._support import results
from ._support import spawn


def test_auto_is_branch_in_a_repository_and_temp_elsewhere(tmp_path: Path) -> None:
    repo = git_workspace(tmp_path / "repo")
    (repo / "sub").mkdir()
    for where in (repo, repo / "sub"):
        plan = plan_workspace("auto", where)
        assert plan.kind is WorkspaceKind.BRANCH and plan.branch is None
        assert plan.describe().startswith("auto: branch, ") and "git repository" in plan.reason
    plain = tmp_path / "plain"
    plain.mkdir()
    plan = plan_workspace("auto", plain)
    assert plan.kind is WorkspaceKind.TEMP and plan.describe().endswith("is in no git repository")


# Each rule of https://git-scm.com/docs/git-check-ref-format, and `--branch`'s own.
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("a..b", "no two consecutive dots"),
        (".hidden", "no component begins with a dot"),
        ("x/.y", "no component begins with a dot"),
        ("done.lock", "no component ends with .lock"),
        ("has space", "no space"),
        ("tilde~1", "no ~"),
        ("caret^", "no ^"),
        ("colon:x", "no :"),
        ("what?", "no ?"),
        ("star*", "no *"),
        ("open[", "no ["),
        ("back\\slash", "no backslash"),
        ("trailing/", "does not end with /"),
        ("double//slash", "no consecutive slashes"),
        ("dot.", "does not end with a dot"),
        ("at@{x", "no @{"),
        ("-dash", "a branch does not start with -"),
        ("HEAD", "a branch is not HEAD"),
        ("ctl\x01", "no control character"),
        ("@{-1}", "an expansion, not a literal name"),
    ],
)
def test_a_name_git_refuses_is_a_one_line_refusal(tmp_path: Path, name: str, why: str) -> None:
    repo = git_workspace(tmp_path / "repo")
    with pytest.raises(WorkspaceError) as info:
        plan_workspace(f"branch:{name}", repo)
    assert "\n" not in str(info.value) and str(info.value).startswith(f"worktree branch:{name}: ")


def test_an_existing_branch_and_a_plain_directory_are_refused(tmp_path: Path) -> None:
    repo = git_workspace(tmp_path / "repo")
    with pytest.raises(WorkspaceError, match="the branch 'main' already exists"):
        plan_workspace("branch:main", repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match="is in no git repository"):
        plan_workspace("branch:feature", plain)
    for bad in ("branch:", "branch: ", "sideways", "Branch"):
        with pytest.raises(ValueError):
            parse_worktree(bad)


def test_a_valid_name_is_the_worktrees_branch(tmp_path: Path) -> None:
    repo = git_workspace(tmp_path / "repo")
    plan = plan_workspace("branch:feature/añadir-1", repo)
    assert plan.kind is WorkspaceKind.BRANCH and plan.branch == "feature/añadir-1"
    ws = make_workspace(plan.kind, repo, tmp_path / "wt", "agent-1", branch=plan.branch)
    assert git(["rev-parse", "--abbrev-ref", "HEAD"], ws.path).strip() == "feature/añadir-1"
    remove_workspace(ws)
    assert "feature/añadir-1" not in git(["branch"], repo)


_NAME_CHARS = st.sampled_from([*list("ab-_./@{}~^:?*[ \\"), "é", "\x7f"])


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(_NAME_CHARS, min_size=1, max_size=12))
def test_any_name_is_either_a_branch_git_makes_or_refused(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    if not repo.exists():
        git_workspace(repo)
    try:
        plan = plan_workspace(f"branch:{name}", repo)
    except WorkspaceError as exc:
        assert "\n" not in str(exc)
        # git itself refuses to make it (or it is not literally that name)
        made = subprocess.run(
            ["git", "check-ref-format", "--branch", name], cwd=repo, capture_output=True, text=True
        )
        assert made.returncode != 0 or made.stdout.strip() != name or name == "main"
        return
    ws = make_workspace(plan.kind, repo, tmp_path / "wt", f"a{abs(hash(name))}", branch=plan.branch)
    try:
        assert git(["rev-parse", "--abbrev-ref", "HEAD"], ws.path).strip() == name
    finally:
        remove_workspace(ws)


def _spawn(cid: str, task: str, worktree: str) -> ToolUseBlock:
    return spawn(cid, "reviewer", task, worktree=worktree)


def _script(request: ModelRequest, n: int) -> list[Any]:
    calls = [
        [_spawn("a", "look around", "auto")],
        [_spawn("b", "look on a branch", "branch:review/one")],
        [_spawn("c", "look on main", "branch:main")],
        [_spawn("d", "look on a bad name", "branch:a..b")],
    ]
    return calls[n] if n < len(calls) else [TextBlock("done")]


@pytest.mark.slow
def test_spawns_with_auto_and_named_branches(tmp_path: Path) -> None:
    root = make_root(tmp_path, _script, mode=Mode.DEFAULT)
    result = root.run("spawn them")
    assert result.status.value == "completed", result.error
    with (root.run_dir / "trace.jsonl").open() as fh:
        _, events = read_trace(fh)
    by_occ = results(events)
    status, text = by_occ["1.0"]
    assert status == "ok" and "auto: branch, " in text and "git repository" in text
    status, text = by_occ["2.0"]
    assert status == "ok" and "branch review/one" in text
    refused = {occ: text for occ, (st_, text) in by_occ.items() if st_ == "error"}
    assert set(refused) == {"3.0", "4.0"}
    assert refused["3.0"].startswith("spawn refused: WORKSPACE: worktree branch:main: ")
    assert "already exists" in refused["3.0"]
    assert refused["4.0"].startswith("spawn refused: WORKSPACE: worktree branch:a..b: ")
    # Each child's trace header says how its workspace was chosen.
    chosen = {
        h.meta["task"]: h.meta["worktree"] for h, _ in read_tree(root.run_dir).values() if h.depth
    }
    assert chosen["look on a branch"] == "branch (review/one)"
    assert chosen["look around"].startswith("auto: branch, ")
    # The named branch was removed with its workspace when the root closed.
    assert "review/one" not in git(["branch"], root.workspace)


LEAD = """---
name: lead
description: May spawn reviewers only.
tools: Read, Agent(reviewer)
---
You lead.
"""


@pytest.mark.slow
def test_agent_restriction_is_enforced_in_the_child(tmp_path: Path) -> None:
    """Claude Code's `Agent(reviewer)`: the child knows only that agent."""
    ws = git_workspace(tmp_path / "ws")
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents" / "lead.md").write_text(LEAD)

    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [ToolUseBlock("l", "spawn_agent", {"agent": "lead", "task": "lead"})]
        return [TextBlock("done")]

    root = make_root(tmp_path, script, workspace=ws)
    assert root.run("go").status.value == "completed"
    with (root.run_dir / "trace.jsonl").open() as fh:
        _, events = read_trace(fh)
    status, text = results(events)["1.0"]
    assert status == "ok", text
    assert "spawn refused: UNKNOWN_AGENT: no agent named 'planner' (known: reviewer)" in text
    spawn = next(e for e in events if e.kind == "spawn")
    assert set(spawn.child_tools) == {"read", "spawn_agent", "list_agents", "wait_agent"}  # type: ignore[union-attr]
