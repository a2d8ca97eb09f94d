"""Ignore rules for the search tools, as git and ripgrep apply them.

From gitignore(5) (https://git-scm.com/docs/gitignore), highest precedence
first, and within one source the last matching pattern decides (`!`
re-includes):
- each directory's `.gitignore`, patterns relative to that directory, a
  deeper file overriding a shallower one (from the repository root down);
- `$GIT_DIR/info/exclude`, relative to the repository root;
- the file `core.excludesFile` names (`global_excludes`), default
  `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`), relative to the root.
"It is not possible to re-include a file if a parent directory of that file
is excluded": an ignored directory is not entered at all; a pattern ending
in `/` matches only a directory. As ripgrep does by default, these apply only
inside a git repository (a `.git` at or above the searched folder).

ripgrep's own files (GUIDE.md, "Automatic filtering",
https://github.com/BurntSushi/ripgrep/blob/master/GUIDE.md): `.ignore`, and
`.rgignore` above it, in the same syntax, "including in parent
directories", inside a repository or not, and taking precedence over every
git source: a `.ignore` match at any depth decides before any `.gitignore`
(ripgrep's `ignore` crate checks the kinds in that order).

The pattern syntax itself is `pathspec.GitIgnoreSpec` (git's wildmatch);
this module adds the nesting. Imports: the standard library and pathspec,
which the search worker reaches through the path it is given. Paths are
relative to `/`, so that the rules of the folders above the searched one
(ripgrep's parents) and those of the repository share one frame.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Sequence

import pathspec

IGNORE_FILE = ".gitignore"
# Per-directory files by precedence rank (lower decides first); the git
# sources below them: info/exclude, then core.excludesFile.
_PER_DIR = ((0, ".rgignore"), (1, ".ignore"), (2, IGNORE_FILE))
_EXCLUDE_RANK, _GLOBAL_RANK = 3, 4
_MAX_RULES_BYTES = 1 << 20

Source = tuple[int, str, pathspec.GitIgnoreSpec]  # (rank, directory relative to /, spec)


class Rules:
    """The ignore sources that apply inside one directory, shallowest first."""

    __slots__ = ("_order", "_sources", "git")

    def __init__(self, sources: Sequence[Source] = (), git: bool = False) -> None:
        self._sources = tuple(sources)
        # By rank, then deepest first: the order in which a match decides.
        self._order = tuple(sorted(reversed(self._sources), key=lambda s: s[0]))
        self.git = git  # inside a git repository: `.gitignore` files count

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (relative to `/`) is ignored by these sources: the
        first source, in precedence order, with a matching pattern decides."""
        for _, where, spec in self._order:
            if where and not rel.startswith(where + "/"):
                continue
            inner = rel[len(where) + 1 :] if where else rel
            result = spec.check_file(inner + "/" if is_dir else inner)
            if result.include is not None:
                return bool(result.include)
        return False

    def entering(self, rel_dir: str, dir_fd: int) -> Rules:
        """The rules inside directory `rel_dir` (open as `dir_fd`): these, plus
        its own `.rgignore`, `.ignore` and (in a repository) `.gitignore`."""
        added = [
            (rank, rel_dir, spec)
            for rank, name in _PER_DIR
            if (self.git or name != IGNORE_FILE) and (spec := _read_spec(name, dir_fd)) is not None
        ]
        return Rules((*self._sources, *added), self.git) if added else self


def _read_bounded(name: str, dir_fd: int | None, follow: bool = False) -> bytes | None:
    """At most _MAX_RULES_BYTES of a file, or None. A symlink is followed only
    with `follow`: the user's own git files (dotfiles are often links), never a
    file in the searched tree."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return os.read(fd, _MAX_RULES_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_spec(
    name: str, dir_fd: int | None, follow: bool = False
) -> pathspec.GitIgnoreSpec | None:
    data = _read_bounded(name, dir_fd, follow)
    if data is None:
        return None
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


def rules_for(base: str, global_excludes: str | None = None) -> tuple[Rules, str]:
    """The rules in force in the folder above `base` (an absolute, resolved
    path) and `base` relative to `/`. Inside a repository: `core.excludesFile`
    (`global_excludes`, found by `excludes_file` where the environment is),
    `.git/info/exclude`, and the `.gitignore`s from the repository root down
    to `base`'s parent; everywhere: the `.rgignore` and `.ignore` files from
    `/` down to `base`'s parent. The walk reads `base`'s own."""
    root = repository_of(base)
    rel_base = base.strip("/")
    sources: list[Source] = []
    if root is not None:
        rel_root = root.strip("/")
        for rank, name in ((_GLOBAL_RANK, global_excludes), (_EXCLUDE_RANK, None)):
            path = name if rank == _GLOBAL_RANK else os.path.join(root, ".git", "info", "exclude")
            spec = _read_spec(path, None, follow=rank == _GLOBAL_RANK) if path else None
            if spec is not None:
                sources.append((rank, rel_root, spec))
    parts = rel_base.split("/") if rel_base else []
    for depth in range(len(parts)):
        rel = "/".join(parts[:depth])
        folder = "/" + rel
        in_repo = root is not None and (folder == root or folder.startswith(root.rstrip("/") + "/"))
        for rank, name in _PER_DIR:
            if name == IGNORE_FILE and not in_repo:
                continue
            spec = _read_spec(os.path.join(folder, name), None)
            if spec is not None:
                sources.append((rank, rel, spec))
    return Rules(sources, git=root is not None), rel_base


def excludes_file(base: str, env: Mapping[str, str] | None = None) -> str | None:
    """The global excludes file for a search of `base`, as git finds it
    (git-config(1) `core.excludesFile`; the last file that sets it wins: the
    repository's `.git/config`, then `$GIT_CONFIG_GLOBAL` or else `~/.gitconfig`
    then `$XDG_CONFIG_HOME/git/config`; unset, `$XDG_CONFIG_HOME/git/ignore`,
    `~/.config/git/ignore` when XDG_CONFIG_HOME is unset or empty). None
    outside a repository. Not read: the system file, `include` directives,
    and a linked worktree's common config. Run where the environment is (the
    search worker has none)."""
    env = os.environ if env is None else env
    root = repository_of(base)
    if root is None:
        return None
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    configs = [os.path.join(root, ".git", "config")]
    if env.get("GIT_CONFIG_GLOBAL"):
        configs.append(env["GIT_CONFIG_GLOBAL"])
    else:
        configs += [os.path.join(home, ".gitconfig")] if home else []
        configs += [os.path.join(xdg, "git", "config")] if xdg else []
    for config in configs:
        value = _core_excludes(config)
        if value is None:
            continue
        if value.startswith("~/") and home:
            value = os.path.join(home, value[2:])
        return os.path.join(root, value) if value else None
    return os.path.join(xdg, "git", "ignore") if xdg else None


def _core_excludes(config: str) -> str | None:
    """The last `excludesFile` of the `[core]` section in one git config file
    (names case-insensitive; `#`/`;` comments; a double-quoted value), or None."""
    data = _read_bounded(config, None, follow=True)
    if data is None:
        return None
    section, found = "", None
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            head, _, rest = line[1:].partition("]")
            section = head.strip().lower()
            line = rest.strip()  # `[core] excludesFile = x` is one line too
        key, eq, value = line.partition("=")
        if section != "core" or key.strip().lower() != "excludesfile" or not eq:
            continue
        found = _config_value(value)
    return found


def _config_value(text: str) -> str:
    out, quoted = [], False
    chars = iter(text.strip())
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
        elif ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()
