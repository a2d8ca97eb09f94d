"""The one writer of a path a user named (`--output FORMAT=PATH`, `--report`,
`--out`), and the atomic replacement every metis file write goes through.

What is at the path decides how it is written (specs/secrets.md, "Files a
user names"):

- nothing, or a regular file: replaced atomically. A temporary file beside
  it (`O_EXCL`, so never someone else's), fsynced, renamed over it; a reader
  sees the old file or the new one, never half of one. An existing file
  keeps its permission bits (and, as root, its owner); a new one gets 0666
  minus the umask, as a shell's `>` would make it. Its folder must exist.
- a symlink: followed to its final target, which these same rules then
  decide: a regular or missing target is replaced atomically (the link stays
  a link to it), a device or FIFO is written through.
- a character device (`/dev/null`, a terminal) or a FIFO: opened and written
  through (appended), never renamed over nor truncated. A FIFO is opened
  without blocking and the open retried until a reader has it open, for at
  most `FIFO_WAIT` seconds: with no reader by then it is an error, never a
  hang. The same goes for a descriptor path (`/dev/stdout`, `/dev/fd/N`,
  `/proc/<pid>/fd/N`): written through, so a shell's redirection of that
  descriptor keeps what it had; one of this process's own is written on
  that descriptor itself, after the process's buffered output, so a report
  sent to `/dev/stdout` and the text output share the file offset of a
  `> file` redirection instead of overwriting each other.
- a directory, a socket or a block device: refused (a report is never
  written over a disk).

Every refusal and failure is a `NamedOutputError`: one line naming the path.
Renaming over a device is what turned a machine's `/dev/null` into a 0600
regular file, as root, when `--output junit=/dev/null` went through a plain
temp-file-and-rename writer (issue 24).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import stat
import sys
import time

__all__ = [
    "FIFO_WAIT",
    "NamedOutputError",
    "replace_at",
    "replace_atomically",
    "write_named_output",
]

FIFO_WAIT = 10.0  # seconds a FIFO may go without a reader before the write is refused
_POLL = 0.02
# A path that names a descriptor of a process (`proc(5)`), not a file.
_DESCRIPTOR = re.compile(r"/dev/(?:stdout|stderr|fd/\d+)|/proc/(?:self|thread-self|\d+)/fd/\d+")

_tmp_counter = itertools.count()


class NamedOutputError(Exception):
    """A path a user named could not be written: `<path>: <why>`, one line."""


def replace_atomically(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace the entry at `path` (never followed: a symlink there is replaced)
    with a regular file holding `data`: a temp file beside it, fsynced, renamed.
    `mode` sets the permission bits; without it an existing regular file keeps
    its own (and, as root, its owner) and a new file gets 0666 minus the umask.
    Raises OSError; the temp file never survives a failure."""
    replace_at(None, os.fspath(path), data, mode, keep_owner=True)


def replace_at(
    dir_fd: int | None, name: str, data: bytes, mode: int | None = None, *, keep_owner: bool = False
) -> None:
    """`replace_atomically` for `name` in the directory `dir_fd` (None: `name`
    is a path), the one temp-file-and-rename of every metis write: the temp
    file (`O_EXCL`, `O_NOFOLLOW`) sits beside `name` in the same directory, so
    the rename never crosses one; `keep_owner`: root writing over a user's
    file keeps it theirs. The containment's `write_at` calls it with the
    directory it walked to."""
    existing: os.stat_result | None = None
    with contextlib.suppress(FileNotFoundError):
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        existing = st if stat.S_ISREG(st.st_mode) else None
    if mode is None and existing is not None:
        mode = stat.S_IMODE(existing.st_mode)
    head, base = os.path.split(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        tmp = os.path.join(head, f".{base}.{os.getpid()}.{next(_tmp_counter)}.tmp")
        try:
            # Created no looser than it ends up (the umask applies): a file opened
            # while its bits were wider would stay readable to whoever opened it.
            fd = os.open(tmp, flags, 0o666 if mode is None else mode & 0o777, dir_fd=dir_fd)
        except FileExistsError:
            continue
        break
    try:
        with open(fd, "wb", closefd=True) as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            if keep_owner and existing is not None and os.geteuid() == 0:
                with contextlib.suppress(OSError):  # root writing a user's file keeps it theirs
                    os.fchown(fh.fileno(), existing.st_uid, existing.st_gid)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # rename(2) replaces
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_named_output(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to the path a user named, by what is there (module doc).
    Raises `NamedOutputError` (one line naming the path)."""
    name = os.fspath(path)
    try:
        if _DESCRIPTOR.fullmatch(os.path.abspath(name)):
            _write_through(name, data)
            return
        try:
            st: os.stat_result | None = os.stat(name)  # follows a symlink to its target
        except FileNotFoundError:
            st = None  # nothing there, or a dangling symlink: made at the link's target
        if st is None or stat.S_ISREG(st.st_mode):
            replace_atomically(os.path.realpath(name), data)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            _write_through(name, data)
        else:
            raise NamedOutputError(f"{name}: {_kind(st.st_mode)}; give a file name")
    except OSError as exc:
        raise NamedOutputError(f"{name}: cannot write ({exc.strerror or exc})") from exc


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISBLK(mode):
        return "is a block device (a report is never written over a disk)"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a file, a character device or a FIFO"


def _own_descriptor(name: str) -> int | None:
    """The descriptor number when `name` is one of this process's own
    (`/dev/stdout`, `/dev/fd/1`, `/proc/self/fd/1`, `/proc/<our pid>/fd/1`)."""
    path = os.path.abspath(name)
    if path in ("/dev/stdout", "/dev/stderr"):
        return 1 if path == "/dev/stdout" else 2
    head, _, number = path.rpartition("/")
    if head in ("/dev/fd", "/proc/self/fd", "/proc/thread-self/fd", f"/proc/{os.getpid()}/fd"):
        return int(number)
    return None


def _write_through(name: str, data: bytes) -> None:
    """Open what is there (a device, a FIFO, a descriptor) and write into it:
    appended, not truncated, never replaced. One of this process's own
    descriptors is written on itself, after what the process has buffered for
    it, so the output and the report do not overwrite each other in a file a
    shell redirected it to."""
    own = _own_descriptor(name) if _DESCRIPTOR.fullmatch(os.path.abspath(name)) else None
    if own is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        fd = os.dup(own)
    else:
        fd = _open_without_hanging(name)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise NamedOutputError(f"{name}: is a directory; give a file name")
        os.set_blocking(fd, True)  # opened: now let a slow reader take its time
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _open_without_hanging(name: str) -> int:
    """`open(O_WRONLY | O_NONBLOCK)`: a FIFO with no reader yet fails with ENXIO
    at once (open(2)), so retry until one comes or `FIFO_WAIT` has passed."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            return os.open(name, flags)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise NamedOutputError(
                    f"{name}: a FIFO no process read within {FIFO_WAIT:g} s; start its reader first"
                ) from exc
            time.sleep(_POLL)
