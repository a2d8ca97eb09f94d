"""Git: `git worktree add` runs no hook of the repository; worktrees and
`metis/*` branches that dead runs left are removed at the next start, those
of a live run are kept."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.agents._worktree import make_workspace
from metis_runtime.agents._worktree import remove_stale_worktrees
from metis_trace import Mode

_ID = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **_ID},
    ).stdout


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    return repo


def test_worktree_add_runs_no_hook(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    hook = repo / ".git" / "hooks" / "post-checkout"
    ran = tmp_path / "hook-ran"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    _git(repo, "checkout", "-q", "-b", "probe")  # the hook does run for git itself
    assert ran.exists()
    ran.unlink()
    ws = make_workspace("branch", repo, tmp_path / "run" / "worktrees", "c1")
    assert (ws.path / "a.txt").exists() and not ran.exists()


def test_stale_worktrees_and_branches_are_removed_live_ones_kept(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    dead_run, live_run = repo / ".metis" / "runs" / "dead", repo / ".metis" / "runs" / "live"
    dead = make_workspace("branch", repo, dead_run / "worktrees", "c1")
    live = make_workspace("branch", repo, live_run / "worktrees", "c2")
    _git(repo, "branch", "metis/orphan")  # a branch whose worktree is long gone
    trace = TraceWriter(live_run / "trace.jsonl", make_header(mode=Mode.DEFAULT, tools=()))
    try:
        removed = remove_stale_worktrees(repo)
        branches = _git(repo, "branch", "--list", "metis/*")
        assert not dead.path.exists() and live.path.exists()
        assert "metis/c1" not in branches and "metis/orphan" not in branches
        assert "metis/c2" in branches
        assert str(dead.path) in removed
    finally:
        trace.close()
    remove_stale_worktrees(repo)  # the live run ended: now it goes too
    assert not live.path.exists() and "metis/c2" not in _git(repo, "branch", "--list", "metis/*")
    assert remove_stale_worktrees(tmp_path) == []  # not in a repository: nothing
