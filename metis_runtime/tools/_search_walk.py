"""The files a search reads and a glob lists, and how a file is read.

- Scope: the walk opens every folder and file relative to its parent's
  descriptor without following symlinks (`os.fwalk`), so nothing outside the
  searched folder is read, even if a folder is swapped for a symlink during
  the walk; `glob_paths` lists only paths whose real location is inside its
  base.
- Ignore files (`_ignore.py`): inside a git repository `.gitignore`,
  `.git/info/exclude` and `core.excludesFile` (`global_excludes`, found where
  the environment is: a worker has none), as ripgrep does; everywhere
  ripgrep's `.ignore` and `.rgignore`; `respect_ignore=False` turns them off.
- Reading: a regular, small, text file, without following a symlink
  (`read_text`); a NUL byte in its head makes it binary (`is_binary`).

Standard library only (and `_ignore`): a search worker imports it.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import threading
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from pathlib import PurePath

try:
    from . import _ignore
except ImportError:  # a worker runs this file as a script: the module beside it
    import _ignore  # type: ignore[import-not-found,no-redef]

__all__ = [
    "BINARY_SNIFF",
    "VCS_DIRS",
    "glob_paths",
    "is_binary",
    "read_text",
    "walk_at",
    "walk_files",
]

BINARY_SNIFF = 8192  # bytes looked at to tell a binary file
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


def is_binary(head: bytes) -> bool:
    """Whether a file's first BINARY_SNIFF bytes make it binary (a NUL byte)."""
    return b"\x00" in head


def _name_filter(name_glob: str | None) -> Callable[[str], bool] | None:
    if name_glob is None:
        return None
    if "/" in name_glob:
        return lambda rel: PurePath(rel).match(name_glob)
    # what PurePath.match does with a one-part pattern, without the parsing
    return lambda rel: fnmatch.fnmatchcase(rel.rpartition("/")[2], name_glob)


def walk_at(
    base: str,
    name_glob: str | None,
    respect_ignore: bool = True,
    global_excludes: str | None = None,
) -> Iterator[tuple[int | None, str, str]]:
    """(folder descriptor, name, path relative to `base`) of each file under
    `base`, in a stable order. Folders are opened relative to their parent
    without following symlinks, so the walk never leaves `base`; VCS folders
    and what the ignore files exclude (`_ignore.py`) are skipped. A
    descriptor is valid until the next item. `base` a file: (None, base, name)."""
    if not os.path.isdir(base):
        yield None, base, os.path.basename(base)
        return
    keep = _name_filter(name_glob)
    found = _ignore.rules_for(base, global_excludes) if respect_ignore else None
    rules: dict[str, _ignore.Rules] = {}
    top = ""
    if found is not None:
        rules[""], top = found
    for root, dirs, files, root_fd in os.fwalk(base, follow_symlinks=False):
        rel_dir = "" if root == base else root[len(base) + 1 :]
        prefix = rel_dir + "/" if rel_dir else ""
        here = rules.get(rel_dir)
        if here is not None:
            in_repo = f"{top}/{rel_dir}".strip("/")
            here = here.entering(in_repo, root_fd)
            repo_prefix = in_repo + "/" if in_repo else ""
        kept = []
        for d in sorted(dirs):
            if d in VCS_DIRS or (here is not None and here.ignored(repo_prefix + d, True)):
                continue
            kept.append(d)
            if here is not None:
                rules[prefix + d] = here
        dirs[:] = kept
        for name in sorted(files):
            rel = prefix + name
            if here is not None and here.ignored(repo_prefix + name, False):
                continue
            if keep is None or keep(rel):
                yield root_fd, name, rel
        rules.pop(rel_dir, None)


def walk_files(
    base: str,
    name_glob: str | None,
    respect_ignore: bool = True,
    global_excludes: str | None = None,
) -> Iterator[tuple[str, str]]:
    """(path, path relative to `base`) of each file `walk_at` yields."""
    for dir_fd, name, rel in walk_at(base, name_glob, respect_ignore, global_excludes):
        yield (name if dir_fd is None else os.path.join(base, rel)), rel


def read_text(path: str, max_bytes: int, dir_fd: int | None = None) -> str | None:
    """The file's text, or None if it is not a readable, regular, small, text
    file. A symlink is not followed; with `dir_fd`, `path` is relative to it."""
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError:
        return None  # unreadable or a symlink: skipped, not an error of the whole search
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        # A short read of a regular file is its end: one read when the size holds.
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read to the bound
            chunks = [data]
            while (chunk := os.read(fd, 65536)) and sum(map(len, chunks)) <= max_bytes:
                chunks.append(chunk)
            data = b"".join(chunks)
            if len(data) > max_bytes:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)
    if is_binary(data[:BINARY_SNIFF]):
        return None
    return data.decode("utf-8", "replace")


def glob_paths(
    base: Path,
    pattern: str,
    stop: threading.Event,
    limit: int,
    hidden: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """Paths under `base` matching `pattern` (at most `limit` + 1), only those
    whose real location is inside `base`: a symlink out of it, or a `..` in
    the pattern, never lists anything outside; none that `hidden` hides.
    ValueError: a bad pattern."""
    if os.path.isabs(pattern) or ".." in PurePath(pattern).parts:
        raise ValueError("must be relative and stay inside 'path' (no '..')")
    root = os.path.realpath(base)
    found: list[Path] = []
    for path in base.glob(pattern):
        if stop.is_set() or len(found) > limit:
            break
        real = os.path.realpath(path)
        if (real == root or real.startswith(root + os.sep)) and not (hidden and hidden(path)):
            found.append(path)
    return found
