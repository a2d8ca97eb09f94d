"""Child workspaces for real: git worktrees from a snapshot, copies, integration."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_runtime.agents import WorkspaceError
from metis_runtime.agents import WorkspaceKind
from metis_runtime.agents import WorkspaceManager
from metis_runtime.agents import changed_files
from metis_runtime.agents import integrate
from metis_runtime.agents import make_workspace
from metis_runtime.agents import remove_workspace

from ._support import git
from ._support import git_workspace


def _status(ws: Path) -> tuple[str, str, str]:
    return (
        git(["status", "--porcelain"], ws),
        git(["stash", "list"], ws),
        git(["rev-parse", "HEAD"], ws),
    )


def test_branch_snapshots_uncommitted_and_untracked_files_not_ignored(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    before = _status(ws)
    child = make_workspace("branch", ws, tmp_path / "wt", "planner-1")
    assert child.kind is WorkspaceKind.BRANCH and child.branch == "metis/planner-1"
    assert (child.path / "tracked.txt").read_text() == "committed\nchanged but not committed\n"
    assert (child.path / "untracked.txt").read_text() == "new and untracked\n"
    assert not (child.path / "ignored.txt").exists()
    # The parent's index, stash, HEAD and files are untouched.
    assert _status(ws) == before
    assert "planner-1" in git(["worktree", "list"], ws)
    # The worktree is clean at start: its branch is the snapshot.
    assert git(["status", "--porcelain"], child.path) == ""
    assert git(["log", "-1", "--format=%P"], child.path).strip() == before[2].strip()
    remove_workspace(child)
    assert not child.root.exists()  # type: ignore[union-attr]
    assert "metis/planner-1" not in git(["branch"], ws)
    assert "planner-1" not in git(["worktree", "list"], ws)


def test_branch_from_a_repository_without_commits_and_from_a_subdirectory(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(["init", "-q"], fresh)
    (fresh / "a.txt").write_text("a\n")
    child = make_workspace("branch", fresh, tmp_path / "wt", "x")
    assert (child.path / "a.txt").read_text() == "a\n"
    remove_workspace(child)

    ws = git_workspace(tmp_path / "ws")
    (ws / "pkg").mkdir()
    (ws / "pkg" / "mod.py").write_text("x = 1\n")
    sub = make_workspace("branch", ws / "pkg", tmp_path / "wt2", "y")
    assert sub.path == sub.root / "pkg"  # type: ignore[operator]
    assert (sub.path / "mod.py").read_text() == "x = 1\n"
    remove_workspace(sub)


def test_branch_needs_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError, match="needs a git repository"):
        make_workspace("branch", plain, tmp_path / "wt", "z")


def test_integrating_a_branch_applies_the_childs_changes(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("branch", ws, tmp_path / "wt", "impl")
    (child.path / "feature.txt").write_text("new\n")
    (child.path / "tracked.txt").write_text(
        "committed\nchanged but not committed\nand by the child\n"
    )
    (child.path / "untracked.txt").unlink()
    assert sorted(changed_files(child)) == ["feature.txt", "tracked.txt", "untracked.txt"]
    manager = WorkspaceManager()
    manager.keep("impl", child)
    assert sorted(manager.integrate("impl")) == ["feature.txt", "tracked.txt", "untracked.txt"]
    assert (ws / "feature.txt").read_text() == "new\n"
    assert (ws / "tracked.txt").read_text().endswith("and by the child\n")
    assert not (ws / "untracked.txt").exists()
    assert not child.path.exists() and manager.retained == {}


def test_a_conflicting_integration_changes_nothing(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("branch", ws, tmp_path / "wt", "impl")
    (child.path / "tracked.txt").write_text("the child's version\n")
    (ws / "tracked.txt").write_text("the parent moved on\n")
    with pytest.raises(WorkspaceError, match="git apply"):
        integrate(child)
    assert (ws / "tracked.txt").read_text() == "the parent moved on\n"
    remove_workspace(child)


def test_temp_is_a_copy_and_integration_copies_back(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("temp", ws, tmp_path / "tmp", "t1")
    assert child.path != ws and not (child.path / ".git").exists()
    assert (child.path / "untracked.txt").exists()
    (child.path / "made.txt").write_text("m\n")
    assert changed_files(child) == ["made.txt"]
    assert integrate(child) == ["made.txt"]
    assert (ws / "made.txt").read_text() == "m\n"
    remove_workspace(child)
    assert not child.path.exists()


def test_inherit_is_the_parent_directory_and_is_never_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    same = make_workspace("inherit", ws, tmp_path / "wt", "i")
    assert same.path == ws.resolve()
    remove_workspace(same)
    manager = WorkspaceManager()
    manager.keep("i", same)
    manager.close()
    assert ws.exists() and manager.retained == {}


def test_retained_workspaces_go_when_the_parent_closes(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    manager = WorkspaceManager()
    kept = [make_workspace("branch", ws, tmp_path / "wt", f"k{i}") for i in range(2)]
    for i, w in enumerate(kept):
        manager.keep(f"k{i}", w)
    manager.close()
    assert all(not w.path.exists() for w in kept)
    assert git(["worktree", "list"], ws).count("\n") == 1
