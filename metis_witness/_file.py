"""Writing the witness file: JSON Lines, mode 0600, redacted, appended whole.

Each call to `write` is one `write(2)` of whole lines on an `O_APPEND`
descriptor, so a witness killed at any point leaves whole lines (and at most
one torn last line, which the reader drops). Every string goes through the
runtime's redactor (its public surface), as everything metis writes does.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

FORMAT = "metis-witness"
VERSION = 3  # specs/witness-schema.json's; 2 added `proc_exit` (TRACE-3), 3 `signal` (TRACE-4)


class WitnessFileError(Exception):
    """The witness file cannot be opened, read or written."""


def _sessions_so_far(path: str) -> int:
    """How many sessions the file holds (0 when new); refuses a foreign file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise WitnessFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    count = 0
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue  # a torn line: the reader drops it
        if isinstance(obj, dict) and obj.get("kind") == "header":
            if obj.get("format") != FORMAT:
                raise WitnessFileError(f"{path}: line {number}: not a metis witness file")
            count += 1
        elif count == 0:
            raise WitnessFileError(f"{path}: line {number}: not a metis witness file")
    return count


class WitnessFile:
    """Appends records; `session` is this process's session number.

    The redactor loads in a thread (importing it takes a few hundred
    milliseconds) so that the witness is ready at once; records wait in
    memory until it is there, and `close` waits for it."""

    def __init__(self, path: str, load_redactor: Callable[[], Callable[[str], str]]) -> None:
        self.path = path
        self._redact: Callable[[str], str] | None = None
        self._pending: list[dict[str, Any]] = []
        self._failure: BaseException | None = None

        def load() -> None:
            try:
                self._redact = load_redactor()
            except BaseException as exc:  # reported by the next write
                self._failure = exc

        self._loader = threading.Thread(target=load, name="witness-redactor", daemon=True)
        self._loader.start()
        try:
            self.session = _sessions_so_far(path)
            try:
                self._fd: int | None = os.open(
                    path,
                    os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
                    0o600,
                )
                os.fchmod(self._fd, 0o600)
            except OSError as exc:
                raise WitnessFileError(f"{path}: cannot open: {exc.strerror or exc}") from exc
        except BaseException:
            # The process is about to exit: a daemon thread killed in the middle
            # of an import aborts the interpreter ("FATAL: exception not
            # rethrown", exit -6) instead of the one-line error and exit 2.
            self._loader.join()
            raise

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            assert self._redact is not None
            return self._redact(value)
        if isinstance(value, list | tuple):
            return [self._clean(v) for v in value]
        if isinstance(value, dict):
            return {k: self._clean(v) for k, v in value.items()}
        if isinstance(value, float):
            return round(value, 6)
        return value

    def write(self, records: Sequence[dict[str, Any]], *, wait: bool = False) -> None:
        self._pending.extend(records)
        if wait:
            self._loader.join()
        if self._failure is not None:
            raise WitnessFileError(f"{self.path}: the redactor could not load: {self._failure}")
        if self._redact is None or not self._pending or self._fd is None:
            return
        records, self._pending = self._pending, []
        data = "".join(
            json.dumps(self._clean(r), ensure_ascii=True, separators=(",", ":")) + "\n"
            for r in records
        ).encode("ascii")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            raise WitnessFileError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self.write([], wait=True)
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.fsync(fd)
            os.close(fd)
