"""Reading input files, hardened: the one way every metis reader opens a file.

- Only a regular file is read: a FIFO, a device, a socket or a directory is
  refused before it is opened (a symlink is followed, so a link to
  `/dev/zero` is refused too). The file is opened with `O_NONBLOCK`, so a
  FIFO swapped in between the check and the open cannot block, and checked
  again on the open descriptor.
- At most `METIS_MAX_INPUT_BYTES` (default 256 MiB) are read; a larger file is
  refused rather than truncated. `-` reads standard input through the same bound.
- Text is strict UTF-8 (a leading byte order mark is dropped, as RFC 8259
  section 8.1 allows); JSON goes through `metis_trace.decode_json`.

Every failure is an `InputError` whose text is one line naming the file (and
the line and field when known). Imports stay minimal: commands that only read
a file should not pay for the runtime.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING
from typing import Any

from metis_trace import InputError
from metis_trace import JsonLimits
from metis_trace import decode_json
from metis_trace import json_limits
from metis_trace import positive_int_setting
from metis_trace import set_json_limits

if TYPE_CHECKING:
    from metis_trace import TraceEvent
    from metis_trace import TraceHeader

MAX_INPUT_BYTES_ENV = "METIS_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = 256 * 1024 * 1024
STDIN = "-"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_configured = False
_max_bytes = DEFAULT_MAX_INPUT_BYTES


def configure_input_limits(environ: dict[str, str] | os._Environ[str] | None = None) -> None:
    """Take the limits from the environment (`METIS_MAX_INPUT_BYTES`,
    `METIS_MAX_JSON_DEPTH`, `METIS_MAX_JSON_INT`); a bad value is an `InputError`."""
    global _configured, _max_bytes
    env = os.environ if environ is None else environ
    _max_bytes = positive_int_setting(env, MAX_INPUT_BYTES_ENV, DEFAULT_MAX_INPUT_BYTES)
    set_json_limits(JsonLimits.from_env(env))
    _configured = True


def max_input_bytes() -> int:
    if not _configured:
        configure_input_limits()
    return _max_bytes


def input_json_limits() -> JsonLimits:
    if not _configured:
        configure_input_limits()
    return json_limits()


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _refuse_special(mode: int, source: str) -> None:
    if not stat.S_ISREG(mode):
        raise InputError(None, f"not a regular file ({_kind(mode)})", source)


def _too_large(limit: int, source: str) -> InputError:
    return InputError(
        None, f"larger than the input limit of {limit} bytes (set {MAX_INPUT_BYTES_ENV})", source
    )


def _cannot(exc: OSError, source: str) -> InputError:
    return InputError(None, f"cannot read ({exc.strerror or exc})", source)


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int:
    """A descriptor on `path`, which must be a regular file: checked before the
    open (a FIFO or device is never opened), opened with `O_NONBLOCK` (a FIFO
    swapped in cannot block, for reading or writing), checked again on the
    descriptor. `flags` may add `O_WRONLY`/`O_RDWR`, `O_APPEND`."""
    source = os.fspath(path)
    if "\x00" in source:  # os.stat would raise ValueError, not OSError
        raise InputError(None, "the path contains a NUL byte", source)
    try:
        before = os.stat(source)
        _refuse_special(before.st_mode, source)
        fd = os.open(source, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise _cannot(exc, source) from exc
    try:
        opened = os.fstat(fd)
        _refuse_special(opened.st_mode, source)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise InputError(None, "changed while it was being opened", source)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_input_bytes(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """The bytes of a regular file (or of standard input for `-`), bounded."""
    bound = max_input_bytes() if limit is None else limit
    source = os.fspath(path)
    if source == STDIN:
        return _read_stdin(bound)
    fd = open_regular(source)
    try:
        return read_fd_bounded(fd, source, limit=bound)
    finally:
        os.close(fd)


def read_fd_bounded(fd: int, source: str, *, limit: int | None = None) -> bytes:
    """All of an open regular file from offset 0 (`pread`: the descriptor's
    position and `O_APPEND` do not matter), refusing more than the limit."""
    bound = max_input_bytes() if limit is None else limit
    chunks: list[bytes] = []
    total = 0
    try:
        if os.fstat(fd).st_size > bound:
            raise _too_large(bound, source)
        while True:
            chunk = os.pread(fd, min(1 << 20, bound + 1 - total), total)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > bound:  # the file grew past the limit while we read it
                raise _too_large(bound, source)
    except OSError as exc:
        raise _cannot(exc, source) from exc


def _read_stdin(bound: int) -> bytes:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        raise InputError(None, "no standard input", "<stdin>")
    try:
        data = stream.read(bound + 1)
    except OSError as exc:
        raise _cannot(exc, "<stdin>") from exc
    if len(data) > bound:
        raise _too_large(bound, "<stdin>")
    return data


def decode_text(data: bytes, source: str) -> str:
    """Strict UTF-8; an error names the line of the first bad byte."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise InputError(line, f"not UTF-8 text (at byte column {column})", source) from exc


def read_input_text(path: str | os.PathLike[str], *, limit: int | None = None) -> str:
    """A regular file's text (strict UTF-8), bounded."""
    source = _name(path)
    return decode_text(read_input_bytes(path, limit=limit), source)


def read_input_json(path: str | os.PathLike[str], *, limit: int | None = None) -> Any:
    """A regular file holding one strict JSON value."""
    source = _name(path)
    return decode_json(
        read_input_text(path, limit=limit), source=source, limits=input_json_limits()
    )


def read_trace_path(
    path: str | os.PathLike[str],
) -> tuple[TraceHeader, list[TraceEvent], list[int]]:
    """A trace file's header, events and the line of each event; every
    problem is an `InputError` naming the file (and line and field)."""
    from metis_trace import read_trace_numbered  # the schema, only where a trace is read

    source = _name(path)
    text = read_input_text(path)
    try:
        return read_trace_numbered(input_lines(text))
    except InputError as exc:
        raise InputError(exc.line, exc.message, exc.source or source) from exc


def input_lines(text: str) -> list[str]:
    """A text's lines, split on LF only: `str.splitlines` would also split at
    U+2028 and other characters a JSON string may hold raw."""
    return text.split("\n")


def _name(path: str | os.PathLike[str]) -> str:
    source = os.fspath(path)
    return "<stdin>" if source == STDIN else source
