"""metis's own files: created 0600 in folders created 0700, whatever the
umask, and what goes into them redacted (specs/secrets.md).

Every file metis itself writes (traces, journals, agent configs and results,
inboxes, logs, ledgers, offloads) is made here or with `PRIVATE_FILE` /
`private_dirs` by its writer. The files an agent's tools write in its
workspace are the user's, and keep the umask's modes.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from ._named_output import replace_atomically
from ._redact import Redactor

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


@functools.cache
def default_redactor() -> Redactor:
    """The redactor of this process's environment (built once)."""
    return Redactor()


def private_dirs(path: str | os.PathLike[str]) -> Path:
    """`mkdir -p path` where each folder it creates is 0700 (an existing one
    is left as it is: it may be the user's). Returns `path`."""
    target = Path(path)
    missing: list[Path] = []
    p = target
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR)
        except FileExistsError:
            continue  # made meanwhile (another agent): as it is
        os.chmod(d, PRIVATE_DIR)  # the umask may have taken bits off
    return target


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """`os.open(path, flags | O_CREAT | O_CLOEXEC)`; a file it creates is 0600
    (fchmod: the umask cannot loosen nor tighten it)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, PRIVATE_FILE)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_private(
    path: str | os.PathLike[str], data: str | bytes, redactor: Redactor | None = None
) -> None:
    """Replace `path` with `data`, redacted, atomically (a temp file beside it,
    fsynced, renamed: `replace_atomically`); 0600, its folders made 0700. A
    symlink there is replaced, never followed: this is metis's own file."""
    target = Path(path)
    private_dirs(target.parent)
    text = data if isinstance(data, str) else data.decode("utf-8", "surrogateescape")
    clean = (redactor or default_redactor()).text(text).encode("utf-8", "surrogateescape")
    replace_atomically(target, clean, PRIVATE_FILE)


def write_private_json(
    path: str | os.PathLike[str], obj: Any, redactor: Redactor | None = None, indent: int = 1
) -> None:
    """`obj` as JSON (every string redacted, and strings under secret-named keys)."""
    clean = (redactor or default_redactor()).value(obj)
    write_private(path, json.dumps(clean, indent=indent), redactor=_NO_REDACTION)


def append_private_jsonl(
    path: str | os.PathLike[str], obj: Any, redactor: Redactor | None = None
) -> None:
    """Append `obj` as one redacted JSON line (0600, folders 0700)."""
    line = (redactor or default_redactor()).json_line(obj) + "\n"
    append_private(path, line, redactor=_NO_REDACTION)


def append_private(
    path: str | os.PathLike[str], text: str, redactor: Redactor | None = None
) -> None:
    """Append `text`, redacted, with one write (0600, folders 0700)."""
    target = Path(path)
    private_dirs(target.parent)
    data = (redactor or default_redactor()).text(text).encode("utf-8", "surrogateescape")
    fd = open_private(target, os.O_WRONLY | os.O_APPEND)
    try:
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


class _Nothing(Redactor):
    """A redactor that keeps the text (for text already redacted)."""

    def __init__(self) -> None:
        super().__init__({})

    def text(self, s: str) -> str:
        return s


_NO_REDACTION = _Nothing()
