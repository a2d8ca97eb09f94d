"""Where a child works: the parent's directory, a git worktree, or a copy.

`branch`: a real `git worktree` on a new branch `metis/<agent id>`, checked
out from a snapshot commit of the parent's workspace as it is now, tracked
changes and untracked (not ignored) files included. The snapshot is built
with a temporary index file (`GIT_INDEX_FILE`), so the parent's index, its
stash and its branches are untouched. `temp`: a copy of the workspace (its
`.git` excepted) in a temporary directory.

Workspaces of children that failed, were cancelled or timed out are removed
at once; successful ones are kept until the parent integrates or discards
them, or exits (`WorkspaceManager.close`).
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path

from attrs import frozen

from .._errors import MetisRuntimeError


class WorkspaceKind(StrEnum):
    INHERIT = "inherit"
    BRANCH = "branch"
    TEMP = "temp"


class WorkspaceError(MetisRuntimeError):
    """A child's workspace could not be made, integrated or removed."""


@frozen
class AgentWorkspace:
    """`path`: where the child works. For `branch`: the worktree's root is
    `root` (the parent may work in a subdirectory of its repository, and so
    does the child), `base` is the snapshot commit."""

    kind: WorkspaceKind
    path: Path
    parent: Path
    root: Path | None = None
    branch: str | None = None
    base: str | None = None
    repo: Path | None = None


def _git(
    args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None, input: str | None = None
) -> str:
    full_env = {**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            input=input,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(f"git {args[0]}: {exc}") from exc
    if done.returncode != 0:
        err = " ".join(done.stderr.split())[:300]
        raise WorkspaceError(f"git {' '.join(args[:2])} failed in {cwd}: {err}")
    return done.stdout


_IDENTITY = {
    "GIT_AUTHOR_NAME": "metis",
    "GIT_AUTHOR_EMAIL": "metis@localhost",
    "GIT_COMMITTER_NAME": "metis",
    "GIT_COMMITTER_EMAIL": "metis@localhost",
}


def snapshot_tree(directory: Path, repo: Path) -> str:
    """The tree of `repo`'s work tree as it is now (tracked changes and
    untracked, not ignored files), written through a temporary index."""
    index = Path(_git(["rev-parse", "--git-path", "index"], repo).strip())
    if not index.is_absolute():
        index = repo / index
    with tempfile.TemporaryDirectory(prefix="metis-index-") as tmp:
        tmp_index = Path(tmp) / "index"
        if index.exists():
            shutil.copyfile(index, tmp_index)  # a warm start: unchanged files are not re-hashed
        env = {"GIT_INDEX_FILE": str(tmp_index)}
        _git(["add", "--all", "--", "."], repo, env)
        return _git(["write-tree"], repo, env).strip()


def snapshot_commit(workspace: Path, agent_id: str) -> tuple[str, Path]:
    """A commit of the workspace's current state (not on any branch); its repo root."""
    repo = Path(_git(["rev-parse", "--show-toplevel"], workspace).strip())
    tree = snapshot_tree(workspace, repo)
    try:
        head = _git(["rev-parse", "--verify", "-q", "HEAD"], repo).strip()
    except WorkspaceError:
        head = ""  # a repository without commits yet
    parents = ["-p", head] if head else []
    message = f"metis: snapshot of the parent's workspace for agent {agent_id}"
    commit = _git(["commit-tree", tree, *parents, "-m", message], repo, _IDENTITY).strip()
    return commit, repo


def make_workspace(
    kind: WorkspaceKind | str, parent: Path, dest_root: Path, agent_id: str
) -> AgentWorkspace:
    """Make the child's workspace under `dest_root` (branch, temp) or reuse the parent's."""
    kind = WorkspaceKind(kind)
    parent = Path(os.path.realpath(parent))
    if kind is WorkspaceKind.INHERIT:
        return AgentWorkspace(kind, parent, parent)
    dest = Path(os.path.realpath(dest_root)) / agent_id
    if dest.exists():
        raise WorkspaceError(f"{dest}: already exists")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if kind is WorkspaceKind.TEMP:
        shutil.copytree(
            parent, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", ".metis")
        )
        return AgentWorkspace(kind, dest, parent, root=dest)
    try:
        commit, repo = snapshot_commit(parent, agent_id)
    except WorkspaceError as exc:
        raise WorkspaceError(f"worktree branch needs a git repository: {exc}") from exc
    branch = f"metis/{agent_id}"
    _git(["worktree", "add", "--quiet", "-b", branch, str(dest), commit], repo)
    sub = parent.relative_to(Path(os.path.realpath(repo)))
    return AgentWorkspace(
        kind, dest / sub, parent, root=dest, branch=branch, base=commit, repo=repo
    )


def remove_workspace(ws: AgentWorkspace) -> None:
    """Remove a branch worktree (and its branch) or a temp copy; never inherit."""
    if ws.kind is WorkspaceKind.INHERIT or ws.root is None:
        return
    if ws.kind is WorkspaceKind.BRANCH and ws.repo is not None:
        try:
            _git(["worktree", "remove", "--force", str(ws.root)], ws.repo)
        except WorkspaceError:
            shutil.rmtree(ws.root, ignore_errors=True)
            _git(["worktree", "prune"], ws.repo)
        if ws.branch is not None:
            with contextlib.suppress(WorkspaceError):  # already gone
                _git(["branch", "-D", ws.branch], ws.repo)
        return
    shutil.rmtree(ws.root, ignore_errors=True)


def changed_files(ws: AgentWorkspace) -> list[str]:
    """Paths (relative to the child's root) the child changed since its start."""
    if ws.kind is WorkspaceKind.BRANCH and ws.root is not None and ws.base is not None:
        tree = snapshot_tree(ws.root, ws.root)
        out = _git(["diff", "--name-only", ws.base, tree], ws.root)
        return [line for line in out.splitlines() if line]
    if ws.kind is WorkspaceKind.TEMP and ws.root is not None:
        return _copied_changes(ws.root, ws.parent)
    return []


def _copied_changes(copy: Path, parent: Path) -> list[str]:
    changed = []
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".metis")]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(copy)
            theirs = parent / rel
            if not theirs.exists() or not filecmp.cmp(path, theirs, shallow=False):
                changed.append(str(rel))
    return sorted(changed)


def integrate(ws: AgentWorkspace) -> list[str]:
    """Bring the child's changes into the parent's workspace.

    branch: the diff from the snapshot to the child's current tree, applied
    with `git apply` to the parent's work tree (a conflict is a
    WorkspaceError and changes nothing). temp: new and changed files are
    copied back (deletions are not). Returns the changed paths.
    """
    if ws.kind is WorkspaceKind.BRANCH and ws.root is not None and ws.base is not None:
        assert ws.repo is not None
        tree = snapshot_tree(ws.root, ws.root)
        patch = _git(["diff", "--binary", ws.base, tree], ws.root)
        if patch.strip():
            # Plain apply (working tree only): --3way would imply --index and
            # refuse files the parent changed without staging.
            _git(["apply", "--whitespace=nowarn", "-"], ws.repo, input=patch)
        return [
            line
            for line in _git(["diff", "--name-only", ws.base, tree], ws.root).splitlines()
            if line
        ]
    if ws.kind is WorkspaceKind.TEMP and ws.root is not None:
        changed = _copied_changes(ws.root, ws.parent)
        for rel in changed:
            target = ws.parent / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ws.root / rel, target)
        return changed
    return []


class WorkspaceManager:
    """The child workspaces one agent made, and what happens to them."""

    def __init__(self) -> None:
        self.retained: dict[str, AgentWorkspace] = {}

    def keep(self, agent_id: str, ws: AgentWorkspace) -> None:
        if ws.kind is not WorkspaceKind.INHERIT:
            self.retained[agent_id] = ws

    def drop(self, ws: AgentWorkspace) -> None:
        remove_workspace(ws)

    def integrate(self, agent_id: str) -> list[str]:
        ws = self.retained.get(agent_id)
        if ws is None:
            raise WorkspaceError(f"{agent_id}: no retained workspace to integrate")
        changed = integrate(ws)
        del self.retained[agent_id]
        remove_workspace(ws)
        return changed

    def discard(self, agent_id: str) -> None:
        ws = self.retained.pop(agent_id, None)
        if ws is not None:
            remove_workspace(ws)

    def close(self) -> None:
        """At exit: every retained workspace the parent did not integrate is removed."""
        for agent_id in list(self.retained):
            # Best effort at shutdown; `git worktree prune` cleans up what is left.
            with contextlib.suppress(WorkspaceError):
                self.discard(agent_id)
