"""Which workspace a child gets: `inherit`, `branch`, `temp`, `auto`, `branch:<name>`.

`auto` picks `branch` when the parent's workspace is in a git repository
and `temp` elsewhere, and says which it chose and why. `branch:<name>` is a
`branch` workspace on the branch `<name>` instead of `metis/<agent id>`; a
name git refuses (`git check-ref-format --branch`, the rules of
https://git-scm.com/docs/git-check-ref-format: no `..`, no component
starting with `.` or ending in `.lock`, no space, `~^:?*[\\`, `@{`, ...) or
an existing branch is a one-line refusal, before anything is made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from attrs import frozen

from ._worktree import WorkspaceError
from ._worktree import WorkspaceKind
from ._worktree import git_output

RequestKind = Literal["inherit", "branch", "temp", "auto"]
WORKTREE_CHOICES: tuple[str, ...] = ("inherit", "branch", "temp", "auto", "branch:<name>")
_KINDS: tuple[RequestKind, ...] = ("inherit", "branch", "temp", "auto")


@frozen
class WorkspaceRequest:
    """A `worktree` value as written: a kind, and for `branch:<name>` the name."""

    kind: RequestKind
    branch: str | None = None

    def __str__(self) -> str:
        return f"branch:{self.branch}" if self.branch is not None else self.kind


@frozen
class WorkspacePlan:
    """The workspace a child will get: its kind, its branch name if one was
    given, what was asked for, and (for `auto`) why this kind."""

    kind: WorkspaceKind
    requested: WorkspaceRequest
    branch: str | None = None
    reason: str = ""

    def describe(self) -> str:
        shown = f"{self.kind.value}" + (f" ({self.branch})" if self.branch else "")
        if self.requested.kind == "auto":
            return f"auto: {shown}, {self.reason}"
        return shown


def parse_worktree(text: str) -> WorkspaceRequest:
    """A `worktree` value; ValueError (one line) for anything else."""
    if text in _KINDS:
        return WorkspaceRequest(text)
    if text.startswith("branch:"):
        name = text[len("branch:") :]
        if not name.strip():
            raise ValueError("branch:<name> needs a branch name")
        return WorkspaceRequest("branch", name)
    raise ValueError(f"{text!r}: one of {', '.join(WORKTREE_CHOICES)}")


def repository_of(directory: Path) -> Path | None:
    """The root of the git work tree holding `directory`, or None."""
    try:
        out = git_output(["rev-parse", "--show-toplevel"], directory).strip()
    except WorkspaceError:
        return None
    return Path(out) if out else None


def check_branch_name(name: str, repo: Path) -> None:
    """WorkspaceError (one line) unless `name` is a new, valid branch of `repo`."""
    shown = ascii(name)
    try:
        normalized = git_output(["check-ref-format", "--branch", name], repo).strip()
    except WorkspaceError:
        raise WorkspaceError(
            f"worktree branch:{name}: {shown} is not a valid branch name (git check-ref-format)"
        ) from None
    if normalized != name:  # `@{-1}` and the like name another branch
        raise WorkspaceError(
            f"worktree branch:{name}: {shown} is not a literal branch name (git reads it as "
            f"{normalized!a})"
        )
    try:
        git_output(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], repo)
    except WorkspaceError:
        return  # no such branch: good
    raise WorkspaceError(f"worktree branch:{name}: the branch {shown} already exists in {repo}")


def plan_workspace(request: WorkspaceRequest | str, parent: Path) -> WorkspacePlan:
    """What `request` means for a child of an agent working in `parent`."""
    if isinstance(request, str):
        try:
            request = parse_worktree(request)
        except ValueError as exc:
            raise WorkspaceError(f"worktree {exc}") from None
    parent = Path(os.path.realpath(parent))
    if request.kind == "auto":
        repo = repository_of(parent)
        if repo is not None:
            return WorkspacePlan(
                WorkspaceKind.BRANCH, request, reason=f"{parent} is in the git repository {repo}"
            )
        return WorkspacePlan(
            WorkspaceKind.TEMP, request, reason=f"{parent} is in no git repository"
        )
    if request.branch is not None:
        repo = repository_of(parent)
        if repo is None:
            raise WorkspaceError(
                f"worktree branch:{request.branch}: {parent} is in no git repository"
            )
        check_branch_name(request.branch, repo)
        return WorkspacePlan(WorkspaceKind.BRANCH, request, branch=request.branch)
    return WorkspacePlan(WorkspaceKind(request.kind), request)
