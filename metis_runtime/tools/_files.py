"""Path resolution, atomic file replacement, and rollback-able file transactions."""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from collections import OrderedDict
from pathlib import Path
from types import TracebackType

from attrs import frozen

from .._errors import ToolError
from .._errors import ToolInputError
from .._realpath import settled_realpath
from ._contain import write_at

_tmp_counter = itertools.count()


def resolve_path(workspace: Path, raw: str, *, tool: str, field: str = "path") -> Path:
    """The real target of `raw`: relative to `workspace` unless absolute, through
    symlinks, `..` and trailing slashes (`os.path.realpath`)."""
    if not raw:
        raise ToolInputError(f"{tool}: field '{field}' must not be empty")
    if "\x00" in raw:
        raise ToolInputError(f"{tool}: field '{field}' contains a NUL byte")
    try:
        return Path(settled_realpath(os.path.join(workspace, raw)))
    except OSError:
        raise ToolError(
            f"{tool}: {raw}: changes while it is resolved (a symlink being swapped)"
        ) from None


# What each name resolved to when its call was classified, which is the path
# the gate decided on, by (call, tool, workspace, name). At run time the name
# must still lead there: a symlink swapped in between would otherwise take
# the tool to a file the gate never saw (specs/secrets.md, "Containment").
# The call (its occurrence, `ToolContext.call_occ`) is part of the key: two
# calls of one batch may name the same file, and one classified while a link
# was swapped in must not vouch for the other's run.
_CHECKED: OrderedDict[tuple[str | None, str, str, str], Path] = OrderedDict()
_CHECKED_MAX = 4096


def checked_path(workspace: Path, raw: str, *, tool: str, occ: str | None = None) -> Path:
    """`resolve_path` at classification, remembered for the run of call `occ`."""
    path = resolve_path(workspace, raw, tool=tool)
    key = (occ, tool, str(workspace), raw)
    _CHECKED[key] = path
    _CHECKED.move_to_end(key)
    while len(_CHECKED) > _CHECKED_MAX:
        _CHECKED.popitem(last=False)
    return path


def path_as_checked(workspace: Path, raw: str, *, tool: str, occ: str | None = None) -> Path:
    """`resolve_path` at run time; a name that leads elsewhere than it did
    when call `occ` was classified fails the call."""
    path = resolve_path(workspace, raw, tool=tool)
    checked = _CHECKED.get((occ, tool, str(workspace), raw))
    if checked is not None and checked != path:
        raise ToolError(
            f"{tool}: {raw}: changed since it was checked"
            f" (it now leads to {display_path(workspace, path)})"
        )
    return path


def display_path(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace when inside it, else absolute."""
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return str(path)
    return str(rel) if rel.parts else "."


def os_error(tool: str, path: Path | str, exc: OSError) -> ToolError:
    """A one-line ToolError for an OSError on `path`."""
    reason = exc.strerror or type(exc).__name__
    return ToolError(f"{tool}: {path}: {reason}")


def atomic_write(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically: temp file in the same directory,
    fsync, rename (`write_at` against the directory's descriptor). An
    existing regular file keeps its permission bits unless `mode` is given;
    a new file gets 0o666 minus the umask; a symlink at `path` is replaced.

    Raises OSError; the temp file never survives a failure.
    """
    directory, base = os.path.split(os.fspath(path))
    dir_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_at(dir_fd, base, data, mode)
    finally:
        os.close(dir_fd)


def place_symlink(path: str | os.PathLike[str], text: str) -> None:
    """Make `path` a symlink to `text`, replacing what is there atomically."""
    target = os.fspath(path)
    directory, base = os.path.split(target)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.{next(_tmp_counter)}.link.tmp")
    os.symlink(text, tmp)
    try:
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@frozen
class _Saved:
    data: bytes | None  # None: the file did not exist (or was a symlink)
    mode: int | None
    created_dirs: tuple[str, ...]  # missing ancestors, deepest first
    link: str | None = None  # a symlink's text, when snapshotted without following it


class FileTransaction:
    """Snapshots of files taken before a multi-step mutation.

    `snapshot(path)` records the current bytes and permission bits of `path`
    (once; later snapshots of the same real path are no-ops); with
    `follow_symlinks=False` a symlink at `path` is recorded as a link. `rollback()`
    restores every snapshotted file exactly, deletes files that did not
    exist, and removes directories created since (when empty). `commit()`
    forgets the snapshots. Used as a context manager, an exception rolls back
    and a normal exit commits.
    """

    __slots__ = ("_saved",)

    def __init__(self) -> None:
        self._saved: dict[str, _Saved] = {}

    @property
    def paths(self) -> tuple[Path, ...]:
        """The real paths snapshotted so far, in snapshot order."""
        return tuple(Path(p) for p in self._saved)

    def snapshot(self, path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> None:
        if follow_symlinks:
            real = os.path.realpath(path)
        else:  # the entry itself, in its real directory
            head, name = os.path.split(os.fspath(path))
            real = os.path.join(os.path.realpath(head), name)
        if real in self._saved:
            return
        if not follow_symlinks and os.path.islink(real):
            self._saved[real] = _Saved(None, None, (), link=os.readlink(real))
            return
        try:
            with open(real, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise ToolError(f"snapshot: {real}: not a regular file")
                saved = _Saved(f.read(), stat.S_IMODE(st.st_mode), ())
        except FileNotFoundError:
            saved = _Saved(None, None, _missing_dirs(os.path.dirname(real)))
        except IsADirectoryError:
            raise ToolError(f"snapshot: {real}: is a directory") from None
        except OSError as exc:
            raise os_error("snapshot", real, exc) from exc
        self._saved[real] = saved

    def rollback(self) -> None:
        """Restore every snapshot (latest first); ToolError if any could not be."""
        failures: list[str] = []
        for real, saved in reversed(self._saved.items()):
            try:
                if saved.link is not None:
                    place_symlink(real, saved.link)
                elif saved.data is None:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(real)
                    for d in saved.created_dirs:
                        try:
                            os.rmdir(d)
                        except OSError:
                            break  # not empty (or gone): leave it and its parents
                else:
                    os.makedirs(os.path.dirname(real), exist_ok=True)
                    atomic_write(real, saved.data, saved.mode)
            except OSError as exc:
                failures.append(f"{real}: {exc.strerror or type(exc).__name__}")
        self._saved.clear()
        if failures:
            raise ToolError(f"rollback failed for {len(failures)} file(s): {'; '.join(failures)}")

    def commit(self) -> None:
        self._saved.clear()

    def __enter__(self) -> FileTransaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()


def _missing_dirs(directory: str) -> tuple[str, ...]:
    missing: list[str] = []
    while directory and not os.path.exists(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return tuple(missing)
