"""`.gitignore` rules for the search tools, as git (and ripgrep) apply them.

From gitignore(5) (https://git-scm.com/docs/gitignore):
- each directory's `.gitignore` holds patterns relative to that directory,
  and a deeper file's decision overrides a shallower one's; within one source
  the last matching pattern decides (`!` re-includes); `$GIT_DIR/info/exclude`
  is read at the root of the repository, below every `.gitignore`;
- "It is not possible to re-include a file if a parent directory of that
  file is excluded": an ignored directory is not entered at all;
- a pattern ending in `/` matches only a directory.
As ripgrep does by default, the rules apply only inside a git repository (a
`.git` at or above the searched folder). Not read: the global excludes file
(`core.excludesFile`) and ripgrep's own `.ignore` / `.rgignore`.

The pattern syntax itself is `pathspec.GitIgnoreSpec` (git's wildmatch);
this module adds the nesting. Imports: the standard library and pathspec,
which the search worker reaches through the path it is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pathspec

IGNORE_FILE = ".gitignore"
_MAX_RULES_BYTES = 1 << 20


class Rules:
    """The ignore sources that apply inside one directory, shallowest first:
    `(directory relative to the repository root, spec)`."""

    __slots__ = ("_sources",)

    def __init__(self, sources: Sequence[tuple[str, pathspec.GitIgnoreSpec]] = ()) -> None:
        self._sources = tuple(sources)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (relative to the repository root) is ignored by these
        sources. The deepest source with a matching pattern decides."""
        for where, spec in reversed(self._sources):
            if where and not rel.startswith(where + "/"):
                continue
            inner = rel[len(where) + 1 :] if where else rel
            result = spec.check_file(inner + "/" if is_dir else inner)
            if result.include is not None:
                return bool(result.include)
        return False

    def entering(self, rel_dir: str, dir_fd: int) -> Rules:
        """The rules inside directory `rel_dir` (open as `dir_fd`): these, plus
        its own `.gitignore` if it has one."""
        spec = _read_spec(IGNORE_FILE, dir_fd)
        return self if spec is None else Rules((*self._sources, (rel_dir, spec)))


def _read_spec(name: str, dir_fd: int | None) -> pathspec.GitIgnoreSpec | None:
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return None
    try:
        data = os.read(fd, _MAX_RULES_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def repository_of(path: str) -> str | None:
    """The root of the git repository holding `path` (a `.git` directory or
    file at or above it), or None."""
    current = path
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def rules_for(base: str) -> tuple[Rules, str] | None:
    """The rules in force in the folder above `base` (`.git/info/exclude` and
    the `.gitignore`s from the repository root down to `base`'s parent; the
    walk reads `base`'s own) and `base` relative to the root; None outside a
    repository."""
    root = repository_of(base)
    if root is None:
        return None
    sources: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = _read_spec(os.path.join(root, ".git", "info", "exclude"), None)
    if exclude is not None:
        sources.append(("", exclude))
    rel_base = os.path.relpath(base, root)
    rel_base = "" if rel_base == "." else rel_base
    parts = rel_base.split("/") if rel_base else []
    for depth in range(len(parts)):
        rel = "/".join(parts[:depth])
        spec = _read_spec(os.path.join(root, rel, IGNORE_FILE), None)
        if spec is not None:
            sources.append((rel, spec))
    return Rules(sources), rel_base
