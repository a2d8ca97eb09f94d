"""Writing the event-graph trace (specs/trace-format.md).

`TraceWriter` assigns `seq` and `t`, redacts credentials, and writes each
event as one whole JSON line with a single `write(2)` on an `O_APPEND`
descriptor (or one `write` + `flush` on a stream), so a process killed at any
point leaves only whole lines behind, and at most one torn final line if the
kill hits the write itself; reopening for append drops such a line.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO
from typing import Any

from pydantic import BaseModel

from metis_trace import Facts
from metis_trace import InputError
from metis_trace import RuleRef
from metis_trace import TraceEvent
from metis_trace import TraceFormatError
from metis_trace import TraceHeader
from metis_trace import read_trace_numbered

from . import _failpoints
from ._errors import MetisRuntimeError
from ._input import open_regular
from ._input import read_fd_bounded
from ._private import open_private
from ._private import private_dirs
from ._redact import Redactor


class TraceWriteError(MetisRuntimeError):
    """The trace file cannot be created, read back, or written."""


# Field values pydantic-core writes fast as they are; others go through `_plain`.
_PLAIN = frozenset({str, int, float, bool, type(None), tuple, list, dict})
# Models whose JSON dump can be kept per instance: frozen, and their fields
# immutable too. The gate hands out the same `Facts` for calls alike.
_IMMUTABLE_MODELS = frozenset({Facts, RuleRef})
_DUMPS_MAX = 256


def _micro(x: float) -> float:
    """`round(x, 6)`, faster: the same double, since below 1e12 microseconds
    the product's error is far below the 0.0001 margin kept from a tie (ties
    and huge values take `round`)."""
    s = x * 1e6
    n = round(s)
    return n / 1e6 if -0.4999 < s - n < 0.4999 and -1e12 < s < 1e12 else round(x, 6)


TRACE_LOG_ENV = "METIS_TRACE_LOG"
CLOCK_META = "clock"  # header meta: how `t` maps to the system's CLOCK_MONOTONIC
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str | None:
    """This boot's id (Linux): CLOCK_MONOTONIC readings compare only within one boot."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def _clock_meta(origin: float) -> dict[str, Any]:
    return {"source": "CLOCK_MONOTONIC", "origin": origin, "boot_id": boot_id()}


def _announce(path: Path) -> None:
    """List this trace in $METIS_TRACE_LOG, where the conformance pytest plugin
    (the pytest-metis plugin) finds every trace a test recorded, subprocesses'
    included, and replays it against the model."""
    log = os.environ.get(TRACE_LOG_ENV)
    if not log:
        return
    try:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{path.resolve()}\n")
    except OSError:
        pass  # a missing log must not stop a run


class TraceWriter:
    """Appends events to a trace; `emit(kind, causes, **fields) -> seq`.

    `target` is a path or a text stream. With a `header`, a path must not
    exist yet (or be empty) and the header is written first. Without one, the
    path must hold a trace: its header is kept, `seq` continues after its
    last event and `t` continues from its last timestamp (a resumed process
    has a different monotonic clock, so `t` is the file's last `t` plus the
    time elapsed since reopening). `events` then holds what was read.

    With the default clock, the header's `meta.clock` records the system's
    CLOCK_MONOTONIC reading at `t = 0` (`origin`) and the boot it belongs to,
    so an outside observer stamping with that clock (the witness) can compare
    its readings with `t`: `t = monotonic - origin`. A process that reopens
    the trace in the same boot keeps that mapping; after a reboot it cannot,
    and `t` continues from the file's last timestamp as above.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | IO[str],
        header: TraceHeader | None = None,
        *,
        redactor: Redactor | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redact = redactor if redactor is not None else Redactor()
        self._clock = clock
        self._fd: int | None = None
        self._stream: IO[str] | None = None
        self.path: Path | None = None
        self.events: list[TraceEvent] = []
        self._seq = 0
        self._t0 = 0.0
        self._dumps: dict[int, tuple[BaseModel, dict[str, Any]]] = {}
        self._m0 = _micro(clock())
        if header is not None and clock is time.monotonic:
            meta = {**header.meta, CLOCK_META: _clock_meta(self._m0)}
            header = header.model_copy(update={"meta": meta})
        if isinstance(target, str | os.PathLike):
            self.path = Path(target)
            if header is None:
                self.header = self._reopen(self.path)
            else:
                self.header = header
                self._create(self.path)
            _announce(self.path)
        else:
            if header is None:
                raise TraceWriteError("a trace written to a stream needs a header")
            self.header = header
            self._stream = target
            self._write_obj(header.model_dump(mode="json"))
        self._last_t = self._t0
        if header is None:
            self._keep_clock_mapping()

    # --- opening ---------------------------------------------------------------

    def _create(self, path: Path) -> None:
        try:
            if path.exists() and path.stat().st_size > 0:
                raise TraceWriteError(f"{path}: trace already exists")
            private_dirs(path.parent)
            self._fd = open_private(path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise TraceWriteError(f"{path}: cannot create trace: {exc.strerror or exc}") from exc
        self._lock(path)
        assert self.header is not None
        self._write_obj(self.header.model_dump(mode="json"))

    def _reopen(self, path: Path) -> TraceHeader:
        try:  # a regular file only, bounded (a FIFO or device is never opened)
            fd = open_regular(path)
            try:
                data = read_fd_bounded(fd, str(path))
            finally:
                os.close(fd)
        except InputError as exc:
            raise TraceWriteError(f"cannot read trace: {exc}") from exc
        end = len(data)
        if data and not data.endswith(b"\n"):
            end = data.rfind(b"\n") + 1  # a torn last line: the kill hit the write
        try:
            text = data[:end].decode("utf-8")
            header, events, _ = read_trace_numbered(io.StringIO(text))
        except UnicodeDecodeError as exc:
            raise TraceWriteError(f"{path}: not UTF-8 text") from exc
        except TraceFormatError as exc:
            raise TraceWriteError(f"{path}: line {exc.line}: {exc.message}") from exc
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as exc:
            raise TraceWriteError(f"{path}: cannot append: {exc.strerror or exc}") from exc
        self._lock(path)
        try:
            if end != len(data):
                os.ftruncate(self._fd, end)
        except OSError as exc:
            raise TraceWriteError(f"{path}: cannot append: {exc.strerror or exc}") from exc
        self.events = events
        self._seq = len(events)
        self._t0 = events[-1].t if events else 0.0
        return header

    def _keep_clock_mapping(self) -> None:
        """On reopening in the boot that wrote the header, keep `t = monotonic - origin`."""
        recorded = self.header.meta.get(CLOCK_META)
        if self._clock is not time.monotonic or not isinstance(recorded, dict):
            return
        origin = recorded.get("origin")
        if recorded.get("boot_id") != boot_id() or not isinstance(origin, float | int):
            return
        if self._m0 - origin >= self._t0:
            self._t0, self._m0 = 0.0, float(origin)

    def _lock(self, path: Path) -> None:
        # One writer per trace: a second process (a resume while the run is
        # still alive) is refused. The kernel drops the lock when we die.
        assert self._fd is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            self._fd = None
            raise TraceWriteError(
                f"{path}: in use by another process (is the run still going?)"
            ) from exc

    # --- writing ---------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        return self._seq

    @property
    def closed(self) -> bool:
        return self._fd is None and self._stream is None

    def now(self) -> float:
        """The next timestamp: never below the last one written."""
        t = _micro(self._t0 + (self._clock() - self._m0))
        return t if t > self._last_t else self._last_t

    def emit(self, kind: str, causes: tuple[int, ...] = (), **fields: Any) -> int:
        """Write one event; return its `seq`."""
        if _failpoints.ARMED:
            _failpoints.reached("trace", kind, fields)
        seq = self._seq
        t = self.now()
        obj = {"seq": seq, "t": t, "causes": causes, "kind": kind, **fields}
        for name, value in fields.items():
            if value.__class__ not in _PLAIN:
                obj[name] = str.__str__(value) if isinstance(value, str) else self._plain(value)
        self._write_obj(obj)
        self._seq = seq + 1
        self._last_t = t
        return seq

    def _plain(self, value: Any) -> Any:
        """`value` as pydantic-core writes it fast, meaning the same JSON: a
        model as its JSON dump, an enum (any str subclass) as its str; it
        infers a subclass's type slowly (microseconds)."""
        if value.__class__ in _IMMUTABLE_MODELS:
            hit = self._dumps.get(id(value))
            if hit is not None and hit[0] is value:
                return hit[1]
            dumped = value.model_dump(mode="json")
            if len(self._dumps) >= _DUMPS_MAX:
                self._dumps.clear()
            self._dumps[id(value)] = (value, dumped)  # held: its id is not reused
            return dumped
        if isinstance(value, str):
            return str.__str__(value)  # the text the stdlib encoder writes
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        return value

    def shown(self, text: str) -> str:
        """`text` as this trace writes it in a field (credentials redacted):
        what a `commit`'s digest is of (RETRY-2)."""
        written = self._redact.json_bytes({"content": text})
        return str(json.loads(written)["content"])

    def _write_obj(self, obj: dict[str, Any]) -> None:
        self._write(self._redact.json_bytes(obj) + b"\n")

    def _write(self, data: bytes) -> None:
        """Write a line: on a file, one `write(2)` unless the kernel takes
        only part of it; on a stream, one write and a flush."""
        try:
            if self._fd is not None:
                while data:
                    data = data[os.write(self._fd, data) :]
            elif self._stream is not None:
                self._stream.write(data.decode("ascii"))
                self._stream.flush()
            else:
                raise TraceWriteError(f"{self.path or 'trace'}: written after close")
        except OSError as exc:
            raise TraceWriteError(f"{self.path or 'trace'}: cannot write: {exc.strerror}") from exc

    def close(self) -> None:
        """fsync and close a file (a stream is only flushed, never closed)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            except OSError:
                pass  # e.g. a pipe or /dev/stdout: the lines are written already
            finally:
                os.close(fd)
        elif self._stream is not None:
            self._stream.flush()
            self._stream = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
