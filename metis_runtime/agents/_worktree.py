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

Integration is planned, then applied (`plan_integration`, `apply_integration`).
The plan lists every path it would change in the parent, resolved, before
anything changes (the permission gate checks each one), and a token of the
child's state; applying refuses a plan whose token no longer matches.
branch: the diff from the snapshot to the child's tree (`git diff-tree
--no-renames`, so a rename lists both paths) applied with `git apply`, which
changes nothing when any hunk fails. temp: new and changed files and symlinks
are copied back (deletions are not); every target's prior state is saved
first and restored if any copy fails, so a failure changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from attrs import frozen

from .._errors import MetisRuntimeError
from .._errors import ToolError
from .._private import PRIVATE_DIR
from .._private import private_dirs
from ..tools._contain import Entry
from ..tools._contain import Roots
from ..tools._contain import put_entry
from ..tools._contain import read_entry
from ..tools._contain import remove_empty_dir


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
            # No hook of the repository runs (`worktree add` would run post-checkout).
            ["git", "-c", f"core.hooksPath={os.devnull}", *args],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            # Paths are bytes to git: undecodable ones round-trip (as `os.fsencode` does).
            encoding="utf-8",
            errors="surrogateescape",
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


git_output = _git  # for the workspace choice (`_placement`): the same git, the same errors

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
    kind: WorkspaceKind | str,
    parent: Path,
    dest_root: Path,
    agent_id: str,
    *,
    branch: str | None = None,
) -> AgentWorkspace:
    """Make the child's workspace under `dest_root` (branch, temp) or reuse the
    parent's. `branch` names a `branch` workspace's branch (default
    `metis/<agent id>`); `_placement.check_branch_name` vets a given name."""
    kind = WorkspaceKind(kind)
    parent = Path(os.path.realpath(parent))
    if kind is WorkspaceKind.INHERIT:
        return AgentWorkspace(kind, parent, parent)
    dest = Path(os.path.realpath(dest_root)) / agent_id
    if dest.exists():
        raise WorkspaceError(f"{dest}: already exists")
    private_dirs(dest.parent)
    if kind is WorkspaceKind.TEMP:
        shutil.copytree(
            parent, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", ".metis")
        )
        os.chmod(dest, PRIVATE_DIR)  # the copy's root is metis's; what is in it, the user's
        return AgentWorkspace(kind, dest, parent, root=dest)
    try:
        commit, repo = snapshot_commit(parent, agent_id)
    except WorkspaceError as exc:
        raise WorkspaceError(f"worktree branch needs a git repository: {exc}") from exc
    branch = branch or f"metis/{agent_id}"
    _git(["worktree", "add", "--quiet", "-b", branch, "--", str(dest), commit], repo)
    os.chmod(dest, PRIVATE_DIR)
    sub = parent.relative_to(Path(os.path.realpath(repo)))
    return AgentWorkspace(
        kind, dest / sub, parent, root=dest, branch=branch, base=commit, repo=repo
    )


def _run_alive(run_dir: Path) -> bool:
    """Whether the run owning `run_dir` (an agent tree's folder) still lives:
    its root trace is locked by the process writing it (`TraceWriter`)."""
    trace = run_dir / "trace.jsonl"
    if not trace.exists() and run_dir.name.endswith(".agents"):
        trace = run_dir.with_name(run_dir.name[: -len(".agents")])
    try:
        fd = os.open(trace, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def remove_stale_worktrees(workspace: Path) -> list[str]:
    """At a run's start: remove the worktrees and `metis/*` branches that runs
    which died left behind (a worktree under some run's `worktrees/` whose run
    no longer lives; a `metis/*` branch no worktree has checked out). Returns
    what was removed; nothing outside a git repository."""
    try:
        repo = Path(_git(["rev-parse", "--show-toplevel"], workspace).strip())
        listing = _git(["worktree", "list", "--porcelain"], repo)
    except WorkspaceError:
        return []
    removed: list[str] = []
    checked_out: set[str] = set()
    for block in listing.strip().split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        path, branch = Path(fields.get("worktree", "")), fields.get("branch", "")
        ours = branch.startswith("refs/heads/metis/") and path.parent.name == "worktrees"
        if ours and not _run_alive(path.parent.parent):
            with contextlib.suppress(WorkspaceError):
                _git(["worktree", "remove", "--force", str(path)], repo)
                removed.append(str(path))
                continue
        if branch:
            checked_out.add(branch)
    with contextlib.suppress(WorkspaceError):
        _git(["worktree", "prune"], repo)
        for ref in _git(["for-each-ref", "--format=%(refname)", "refs/heads/metis/"], repo).split():
            if ref not in checked_out:
                _git(["branch", "-D", ref.removeprefix("refs/heads/")], repo)
                removed.append(ref)
    return removed


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


_NOT_COPIED = (".git", ".metis")  # never copied into a temp workspace, nor back


def _tree_changes(ws: AgentWorkspace, tree: str) -> list[str]:
    """Paths (relative to the repository root) that differ between the
    snapshot and `tree`: plumbing (no diff.* config), no rename detection (a
    rename is a deletion and an addition: both paths), NUL-separated (no
    quoting of unusual names)."""
    assert ws.root is not None and ws.base is not None
    out = _git(["diff-tree", "-r", "--name-only", "--no-renames", "-z", ws.base, tree], ws.root)
    return [name for name in out.split("\0") if name]


def printable(path: str) -> str:
    """`path` for a report: undecodable bytes (surrogate escapes) shown as `\\udcXX`."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8")


def changed_files(ws: AgentWorkspace) -> list[str]:
    """Paths (relative to the child's root) the child changed since its start."""
    if ws.kind is WorkspaceKind.BRANCH and ws.root is not None and ws.base is not None:
        return _tree_changes(ws, snapshot_tree(ws.root, ws.root))
    if ws.kind is WorkspaceKind.TEMP and ws.root is not None:
        return _copied_changes(ws.root, ws.parent)
    return []


def _differs(ours: Path, theirs: Path) -> bool:
    """Whether the copy's entry `ours` (a regular file or a symlink) differs from
    the parent's `theirs`: a symlink by its target text, a file by its bytes
    (following a symlink at `theirs`, where a copy would land)."""
    if ours.is_symlink():
        return not (theirs.is_symlink() and os.readlink(theirs) == os.readlink(ours))
    return not (theirs.is_file() and filecmp.cmp(ours, theirs, shallow=False))


def _copied_changes(copy: Path, parent: Path) -> list[str]:
    """New and changed regular files and symlinks of a temp copy (relative
    paths, sorted); other kinds of entries (fifos, sockets) are skipped."""
    changed = []
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d not in _NOT_COPIED]
        here = Path(dirpath)
        # A symlink to a directory is listed with the directories, and not entered.
        links = [d for d in dirnames if (here / d).is_symlink()]
        for name in (*filenames, *links):
            path = here / name
            st = path.lstat()
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue
            rel = path.relative_to(copy)
            if _differs(path, parent / rel):
                changed.append(str(rel))
    return sorted(changed)


@frozen
class IntegrationPlan:
    """What integrating a retained workspace would change, computed before
    anything changes.

    `paths`: the changed paths, relative to the parent's repository root
    (branch) or workspace (temp). `targets`: where each lands in the parent,
    resolved (realpath; for a symlink copied back, the link's own place), so
    the permission gate checks every path it would change. `token`: the
    child's state (its tree id for branch; a sha-256 of the changed entries
    for temp); `apply_integration` refuses a plan whose token no longer holds.
    """

    kind: WorkspaceKind
    paths: tuple[str, ...]
    targets: tuple[Path, ...]
    token: str


def _copy_target(parent: Path, rel: str, source: Path) -> Path:
    """Where copying `source` back lands: a file is written through any
    symlink at its place; a symlink replaces what is at its place, and a
    deletion removes it (a symlink itself, never what it points to)."""
    place = parent / rel
    if source.is_symlink() or not os.path.lexists(source):  # a link, or a deletion
        return Path(os.path.realpath(place.parent)) / place.name
    return Path(os.path.realpath(place))


def _copy_digest(copy: Path, paths: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for rel in paths:
        source = copy / rel
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        if source.is_symlink():
            digest.update(b"L" + os.fsencode(os.readlink(source)))
        else:
            digest.update(b"F%o\0" % stat.S_IMODE(source.stat().st_mode))
            digest.update(hashlib.sha256(source.read_bytes()).digest())
    return digest.hexdigest()


def plan_integration(ws: AgentWorkspace) -> IntegrationPlan:
    """The plan of integrating `ws` into its parent (WorkspaceError if it
    cannot be computed, if a copy would land on a directory, or if the child
    left a symlink pointing outside the parent's workspace)."""
    plan: IntegrationPlan | None
    try:
        if ws.kind is WorkspaceKind.BRANCH and ws.root is not None and ws.base is not None:
            assert ws.repo is not None
            tree = snapshot_tree(ws.root, ws.root)
            paths = tuple(_tree_changes(ws, tree))
            repo = Path(os.path.realpath(ws.repo))
            targets = tuple(_copy_target(repo, p, ws.root / p) for p in paths)
            plan = IntegrationPlan(ws.kind, paths, targets, tree)
            parent = repo
        elif ws.kind is WorkspaceKind.TEMP and ws.root is not None:
            paths = tuple(_copied_changes(ws.root, ws.parent))
            parent = Path(os.path.realpath(ws.parent))
            targets = tuple(_copy_target(parent, p, ws.root / p) for p in paths)
            for rel, target in zip(paths, targets, strict=True):
                if target.is_dir() and not target.is_symlink():
                    raise WorkspaceError(f"{rel}: is a directory in the parent's workspace")
            plan = IntegrationPlan(ws.kind, paths, targets, _copy_digest(ws.root, paths))
        else:
            plan = None
    except (OSError, WorkspaceError) as exc:
        raise WorkspaceError(f"cannot list the changes of {ws.path}: {exc}") from exc
    if plan is None or ws.root is None:
        raise WorkspaceError(f"{ws.path}: a {ws.kind.value} workspace has nothing to integrate")
    _refuse_outward_links(ws.root, parent, plan)
    return plan


def _refuse_outward_links(copy: Path, parent: Path, plan: IntegrationPlan) -> None:
    """WorkspaceError if the child left a symlink that points outside the
    parent's workspace (lexically, or through the parent's own symlinks):
    integrated, it would lead the parent's tools (bash above all) outside."""
    for rel, target in zip(plan.paths, plan.targets, strict=True):
        source = copy / rel
        if not source.is_symlink():
            continue
        text = os.readlink(source)
        for where in (
            os.path.normpath(target.parent / text),
            os.path.realpath(target.parent / text),
        ):
            if not _within(Path(where), parent):
                raise WorkspaceError(
                    f"cannot integrate: {printable(rel)} is a symlink to {printable(text)}, "
                    "outside the parent's workspace"
                )


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _refuse_protected(parent: Path, plan: IntegrationPlan, protected: Sequence[Path]) -> None:
    """WorkspaceError (naming the first path) if the plan would change
    something outside the parent's workspace, in its `.git/` or `.metis/`
    (settings, agent definitions, runs), or one of the run's own files
    (`protected`: the trace, journal, `guard.json`, `agents/`, `offload/`),
    whatever the gate decided."""
    roots = [Path(os.path.realpath(p)) for p in protected]
    for rel, target in zip(plan.paths, plan.targets, strict=True):
        shown = printable(rel)
        if not _within(target, parent):
            raise WorkspaceError(f"cannot integrate: {shown} lands outside the workspace")
        if any(part in _NOT_COPIED for part in target.parts[len(parent.parts) :]):
            raise WorkspaceError(f"cannot integrate: {shown} is in git's or metis's own folder")
        if any(_within(target, r) for r in roots):
            raise WorkspaceError(f"cannot integrate: {shown} is one of this run's own files")


def apply_integration(
    ws: AgentWorkspace, plan: IntegrationPlan, protected: Sequence[Path] = ()
) -> list[str]:
    """Apply `plan` to the parent's workspace; all or nothing. WorkspaceError
    (nothing changed) if the child's workspace no longer matches the plan, on
    a conflict (branch), or when a write fails (after restoring).

    Every change in the parent (files, symlinks, deletions, directories,
    modes) goes through the tools' containment (`tools/_contain.py`): opened
    relative to the parent's workspace, following no symlink, so a symlink
    swapped in meanwhile makes the integration fail instead of writing
    outside."""
    now = plan_integration(ws)
    if now.token != plan.token or now.paths != plan.paths or now.targets != plan.targets:
        raise WorkspaceError(
            f"{ws.path} changed since its integration was planned; nothing was applied"
        )
    if not plan.paths:
        return []
    assert ws.root is not None
    if plan.kind is WorkspaceKind.BRANCH:
        assert ws.repo is not None
        parent = Path(os.path.realpath(ws.repo))
        _refuse_protected(parent, plan, protected)
        try:
            entries = _patched_entries(ws, plan)
        except (OSError, ToolError) as exc:
            raise WorkspaceError(f"cannot read the parent's files: {_why(exc)}") from exc
    else:
        parent = Path(os.path.realpath(ws.parent))
        _refuse_protected(parent, plan, protected)
        source = Roots([ws.root])
        try:
            entries = [read_entry(source, ws.root / rel, tool=_TOOL) for rel in plan.paths]
        except (OSError, ToolError) as exc:
            raise WorkspaceError(f"cannot read the child's copy: {_why(exc)}") from exc
    _put_all(Roots([parent]), plan, entries)
    return list(plan.paths)


_TOOL = "integrate_agent"


def _patched_entries(ws: AgentWorkspace, plan: IntegrationPlan) -> list[Entry | None]:
    """What each of the plan's paths holds once the child's diff is applied
    to the parent's current entries: the parent's entries are read
    (contained) into a scratch directory outside any repository, `git apply`
    runs there, and the results are read back. Plain apply: nothing changes
    unless every hunk of every file applies."""
    assert ws.root is not None and ws.base is not None and ws.repo is not None
    # Plumbing: a user's diff.noprefix or diff.external cannot reshape the patch.
    patch = _git(
        ["diff-tree", "-r", "-p", "--binary", "--no-renames", ws.base, plan.token], ws.root
    )
    parent = Roots([Path(os.path.realpath(ws.repo))])
    with tempfile.TemporaryDirectory(prefix="metis-integrate-") as scratch_dir:
        scratch = Path(scratch_dir) / "tree"
        scratch.mkdir()
        mine = Roots([scratch])
        for rel, target in zip(plan.paths, plan.targets, strict=True):
            entry = read_entry(parent, target, tool=_TOOL)
            if entry is not None:
                put_entry(mine, scratch / rel, entry, tool=_TOOL)
        # No repository above the scratch directory: git apply patches plain files.
        env = {"GIT_CEILING_DIRECTORIES": scratch_dir}
        try:
            _git(["apply", "--whitespace=nowarn", "-"], scratch, env=env, input=patch)
        except WorkspaceError as exc:
            raise WorkspaceError(
                f"the changes conflict with the parent's workspace; nothing was changed ({exc})"
            ) from exc
        return [read_entry(mine, scratch / rel, tool=_TOOL) for rel in plan.paths]


def _put_all(roots: Roots, plan: IntegrationPlan, entries: Sequence[Entry | None]) -> None:
    """Put each entry at its target (None: delete it), saving what was there
    first; on any failure restore every target already changed and remove
    the directories made, then raise. Directories a deletion empties are
    removed (as git does)."""
    saved: list[tuple[Path, Entry | None]] = []
    created: list[Path] = []
    current = ""
    try:
        for rel, target, entry in zip(plan.paths, plan.targets, entries, strict=True):
            current = rel
            saved.append((target, read_entry(roots, target, tool=_TOOL)))
            put_entry(roots, target, entry, tool=_TOOL, created=created)
    except (OSError, ToolError) as exc:
        reason = f"copying back {printable(current)} failed ({_why(exc)})"
        failed = []
        for target, old in reversed(saved):
            try:
                put_entry(roots, target, old, tool=_TOOL)
            except (OSError, ToolError):
                failed.append(str(target))
        for directory in reversed(created):
            try:
                remove_empty_dir(roots, directory, tool=_TOOL)
            except (OSError, ToolError):  # a symlink swapped in on the way: left, and named
                failed.append(str(directory))
        if failed:
            raise WorkspaceError(f"{reason}; could not restore {', '.join(failed)}") from exc
        raise WorkspaceError(f"{reason}; every file changed before it was restored") from exc
    for target, entry in zip(plan.targets, entries, strict=True):
        if entry is None:
            directory = target.parent
            while directory != roots.roots[0] and remove_empty_dir(roots, directory, tool=_TOOL):
                directory = directory.parent


def _why(exc: OSError | ToolError) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)


def integrate(ws: AgentWorkspace, protected: Sequence[Path] = ()) -> list[str]:
    """Bring the child's changes into the parent's workspace (plan, then apply);
    returns the changed paths. See the module doc."""
    return apply_integration(ws, plan_integration(ws), protected)


class WorkspaceManager:
    """The child workspaces one agent made, and what happens to them."""

    def __init__(self, protected: Sequence[Path] = ()) -> None:
        self.retained: dict[str, AgentWorkspace] = {}
        self.protected = tuple(protected)  # the run's own files: never integrated into

    def keep(self, agent_id: str, ws: AgentWorkspace) -> None:
        if ws.kind is not WorkspaceKind.INHERIT:
            self.retained[agent_id] = ws

    def drop(self, ws: AgentWorkspace) -> None:
        remove_workspace(ws)

    def _retained(self, agent_id: str) -> AgentWorkspace:
        ws = self.retained.get(agent_id)
        if ws is None:
            raise WorkspaceError(f"{agent_id}: no retained workspace to integrate")
        return ws

    def plan(self, agent_id: str) -> IntegrationPlan:
        """What integrating this agent's workspace would change (WorkspaceError if
        none is retained or the changes cannot be listed)."""
        return plan_integration(self._retained(agent_id))

    def integrate(self, agent_id: str, expect: IntegrationPlan | None = None) -> list[str]:
        """Apply the retained workspace (the plan `expect`, if given: refused
        when the workspace no longer matches it), then remove it. A failure
        changes nothing and keeps the workspace."""
        ws = self._retained(agent_id)
        plan = expect if expect is not None else plan_integration(ws)
        changed = apply_integration(ws, plan, self.protected)
        del self.retained[agent_id]
        with contextlib.suppress(WorkspaceError):  # applied: a failed removal is no failure
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
