"""Race-free containment: the tools open what the gate checked, and nothing
outside their roots (specs/secrets.md, "Containment").

The gate decides on a call's resolved path (`resolve_path`: realpath, no
symlink left in it). The tool then opens that same path relative to a
directory descriptor of the root that holds it, following no symlink at all:
- with `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
  RESOLVE_NO_MAGICLINKS` where the kernel has it (Linux 5.6+, through
  ctypes): the kernel refuses any `..` or symlink on the way, so the open
  can neither leave the root nor land anywhere but at the path the gate saw;
- elsewhere (an older kernel, a seccomp filter that refuses the call, not
  Linux) by walking the path one component at a time with `openat` and
  `O_NOFOLLOW`, each directory held open while the next is opened.
A symlink swapped in after the decision makes the open fail (`ELOOP`), and
the call fails with "changed since it was checked"; it never follows it.
Writes go through the parent directory's descriptor (`openat`, `renameat`
against that same descriptor), so swapping the parent directory for a
symlink after it was opened redirects nothing.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import itertools
import os
import stat
import sys
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from contextlib import suppress
from pathlib import Path

from attrs import frozen

from .._errors import ToolError
from .._named_output import replace_at

_SYS_OPENAT2 = 437  # the same number on every Linux architecture
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
_DIR_STEP = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_tmp_counter = itertools.count()


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


class Escape(ToolError):
    """A path outside every root, or one that changed since it was checked."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_openat2_state: dict[str, bool] = {}


def openat2_available() -> bool:
    """Whether this kernel serves openat2 with RESOLVE_BENEATH (probed once)."""
    if "ok" not in _openat2_state:
        try:
            fd = _openat2(os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), ".", os.O_PATH)
        except OSError:
            fd = None
        _openat2_state["ok"] = fd is not None
        if fd is not None:
            os.close(fd)
    return _openat2_state["ok"]


def _openat2(
    dir_fd: int, rel: str, flags: int, mode: int = 0, *, close_dir: bool = True
) -> int | None:
    """openat2, or None where the kernel (or a filter) does not serve it.
    Raises OSError for every other failure. Closes `dir_fd` if asked."""
    try:
        libc = _libc()
        if libc is None:
            return None
        # openat2 refuses a mode without O_CREAT / O_TMPFILE (EINVAL).
        tmpfile = getattr(os, "O_TMPFILE", 0)  # holds O_DIRECTORY's bit: test it whole
        creates = flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile)
        how = _OpenHow(flags | os.O_CLOEXEC, mode if creates else 0, _RESOLVE)
        fd = int(
            libc.syscall(
                _SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how)
            )
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG) and "ok" not in _openat2_state:
            return None
        raise OSError(err, os.strerror(err), rel)
    finally:
        if close_dir:
            os.close(dir_fd)


def _walk(dir_fd: int, parts: Sequence[str], flags: int, mode: int) -> int:
    """Open `parts` below `dir_fd` one component at a time, following no
    symlink (O_NOFOLLOW); the caller's `dir_fd` stays open."""
    cur = dir_fd
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            step = (flags | os.O_NOFOLLOW | os.O_CLOEXEC) if last else _DIR_STEP
            nxt = os.open(part, step, mode, dir_fd=cur)
            if cur != dir_fd:
                os.close(cur)
            cur = nxt
        if cur == dir_fd:  # no parts: the root itself
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        return cur
    except BaseException:
        if cur != dir_fd:
            os.close(cur)
        raise


class Roots:
    """The directories a call's files must lie in: the workspace first, then
    any additional ones; `open` opens a resolved path inside one of them."""

    def __init__(self, roots: Sequence[Path], *, use_openat2: bool | None = None) -> None:
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        self._use_openat2 = use_openat2

    def _uses_openat2(self) -> bool:
        return openat2_available() if self._use_openat2 is None else self._use_openat2

    def locate(self, path: Path, tool: str) -> tuple[Path, tuple[str, ...]]:
        """The root holding `path` (resolved) and the parts below it; Escape if none."""
        for root in self.roots:
            parts = path.parts
            if parts[: len(root.parts)] == root.parts:
                rest = parts[len(root.parts) :]
                if ".." in rest:
                    break
                return root, tuple(rest)
        raise Escape(f"{tool}: {path}: outside the workspace")

    def open(self, path: Path, flags: int, mode: int = 0o666, *, tool: str) -> int:
        """A descriptor of `path` (resolved, inside a root), opened with no
        symlink followed on the way. Escape if it is outside every root or
        changed since it was resolved (a symlink where none was); OSError
        for the rest (ENOENT, EISDIR, ...)."""
        root, parts = self.locate(path, tool)
        try:
            root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise Escape(f"{tool}: {root}: the workspace cannot be opened") from exc
        try:
            if self._uses_openat2():
                fd = _openat2(root_fd, os.path.join(".", *parts), flags, mode, close_dir=False)
                if fd is not None:
                    return fd
            return _walk(root_fd, parts, flags, mode)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV) or (
                exc.errno == errno.ENOTDIR and _has_symlink(root_fd, parts)
            ):
                raise Escape(
                    f"{tool}: {path}: changed since it was checked (a symlink on the way); "
                    "not followed"
                ) from None
            raise
        finally:
            os.close(root_fd)

    @contextmanager
    def parent(
        self, path: Path, *, tool: str, create: bool = False, created: list[Path] | None = None
    ) -> Iterator[int]:
        """A descriptor of `path`'s directory (made, one contained component
        at a time, if `create`; each directory made is added to `created`),
        for `openat` / `renameat` of its last part."""
        root, parts = self.locate(path, tool)
        if not parts:
            raise Escape(f"{tool}: {path}: is the workspace itself")
        parent = root.joinpath(*parts[:-1])
        if create:
            self._makedirs(root, parts[:-1], tool, created)
        fd = self.open(parent, os.O_RDONLY | os.O_DIRECTORY, tool=tool)
        try:
            yield fd
        finally:
            os.close(fd)

    def _makedirs(
        self, root: Path, parts: Sequence[str], tool: str, created: list[Path] | None = None
    ) -> None:
        for i in range(len(parts)):
            here = root.joinpath(*parts[: i + 1])
            with self.parent(here, tool=tool) as dir_fd:
                try:
                    os.mkdir(parts[i], 0o777, dir_fd=dir_fd)
                except FileExistsError:
                    continue
            if created is not None:
                created.append(here)


def _has_symlink(root_fd: int, parts: Sequence[str]) -> bool:
    """Whether a component of `parts` below `root_fd` is (now) a symlink."""
    cur = os.dup(root_fd)
    try:
        for part in parts:
            try:
                st = os.stat(part, dir_fd=cur, follow_symlinks=False)
            except OSError:
                return False
            if not stat.S_ISDIR(st.st_mode):
                return stat.S_ISLNK(st.st_mode)
            nxt = os.open(part, _DIR_STEP, dir_fd=cur)
            os.close(cur)
            cur = nxt
        return False
    finally:
        os.close(cur)


def write_at(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Replace `name` in the directory `dir_fd` with `data` atomically: a temp
    file beside it (O_EXCL, O_NOFOLLOW), fsync, `renameat` within that same
    directory (`_named_output.replace_at`, the one such write). An existing
    regular file keeps its permission bits unless `mode` is given; a symlink
    at `name` is replaced, never followed. Raises OSError; the temp file never
    survives a failure."""
    replace_at(dir_fd, name, data, mode)


# --- whole entries, for integration's copy-back (specs/secrets.md) -------------------


@frozen
class Entry:
    """What is at a path: a regular file (`data`, `mode`) or a symlink (`link`)."""

    data: bytes | None = None
    mode: int = 0o644
    link: str | None = None


def read_entry(roots: Roots, path: Path, *, tool: str) -> Entry | None:
    """The entry at `path` (resolved, inside a root), read following no
    symlink: a regular file's bytes and permission bits, a symlink's text;
    None if nothing is there (nor its directory). OSError for anything else
    (a directory, a fifo); Escape as `Roots.open`."""
    try:
        with roots.parent(path, tool=tool) as dir_fd:
            return _read_entry_at(dir_fd, path)
    except FileNotFoundError:
        return None


def _read_entry_at(dir_fd: int, path: Path) -> Entry | None:
    try:
        st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Entry(link=os.readlink(path.name, dir_fd=dir_fd))
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EISDIR, "not a regular file or a symlink", str(path))
    fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with open(fd, "rb", closefd=True) as fh:
        return Entry(data=fh.read(), mode=stat.S_IMODE(os.fstat(fh.fileno()).st_mode))


def put_entry(
    roots: Roots, path: Path, entry: Entry | None, *, tool: str, created: list[Path] | None = None
) -> None:
    """Make `path` hold `entry` (None: remove what is there), through the
    parent directory's descriptor, following no symlink: missing parents are
    made one contained component at a time (each listed in `created`), a
    file is replaced atomically (`write_at`), a symlink is made beside it and
    renamed over it, a removal unlinks the name (a symlink itself, never what
    it points to)."""
    with roots.parent(path, tool=tool, create=entry is not None, created=created) as dir_fd:
        name = path.name
        if entry is None:
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
        elif entry.link is not None:
            tmp = f".{name}.{os.getpid()}.{next(_tmp_counter)}.link.tmp"
            os.symlink(entry.link, tmp, dir_fd=dir_fd)
            try:
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
        else:
            assert entry.data is not None
            write_at(dir_fd, name, entry.data, entry.mode)


def remove_empty_dir(roots: Roots, path: Path, *, tool: str) -> bool:
    """Remove the directory `path` if it is empty (contained); whether it was."""
    try:
        with roots.parent(path, tool=tool) as dir_fd:
            os.rmdir(path.name, dir_fd=dir_fd)
    except OSError:
        return False
    return True
