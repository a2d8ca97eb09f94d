"""The witness file: effects observed from outside the runtime while a run executes.

Specified in `specs/witness.md`. JSON Lines. Each witness process (one per
run process: the first run and every resume) appends a *session*: a header
line (format, version, what it watched and what it could not), then records.
Every time is a CLOCK_MONOTONIC reading in seconds (the trace header's
`meta.clock` maps trace `t` to the same clock). A change is known only to
lie in its window `(lo, hi]`: after the witness last found the kernel's
queue without it, and no later than the witness read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Annotated
from typing import Any
from typing import Literal

import attrs
from pydantic import Field
from pydantic import TypeAdapter

from ._errors import TraceFormatError
from ._facts import _Record
from ._io import _decode
from ._io import _strict
from ._jsonl import jsonl_schema
from ._jsonl import union_kinds

WITNESS_FORMAT = "metis-witness"
WITNESS_VERSION = 3
# Version 1 recorded no process exits (`proc_exit`), version 2 no signal
# deliveries (`signal`): both are read, and their sessions say what was not
# observed (TRACE-3 and TRACE-4 then warn, never pass).
WITNESS_READ_VERSIONS: tuple[int, ...] = (1, 2, 3)


class Watched(_Record):
    """One thing the witness watched: `files` (inotify, recursively under
    `roots`, minus `excluded`), `exec` (process execution, through strace),
    `exits` (every traced process's exit status, through strace) or `signals`
    (the deliveries of `signals` to every traced process, through strace)."""

    what: Literal["files", "exec", "exits", "signals"]
    how: str
    roots: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()


class Unobserved(_Record):
    """Something the witness could not watch in this session, and why."""

    what: str
    why: str


class WitnessHeader(_Record):
    kind: Literal["header"] = "header"
    format: Literal["metis-witness"] = "metis-witness"
    version: int = WITNESS_VERSION
    session: int = 0  # 0 for the run's first process, then one more per resume
    producer: str = "unknown"
    pid: int  # the witness process
    clock: Literal["CLOCK_MONOTONIC"] = "CLOCK_MONOTONIC"
    boot_id: str | None = None
    t: float  # when this witness process started
    trace: str | None = None  # the trace of the run it witnesses, as given
    watched: tuple[Watched, ...] = ()
    not_observed: tuple[Unobserved, ...] = ()
    limits: dict[str, int] = Field(default_factory=dict)  # the kernel's inotify limits


class Ready(_Record):
    """Every watch is in place; the witnessed run starts only after this."""

    kind: Literal["ready"] = "ready"
    t: float


class RunStarted(_Record):
    """The witnessed process: started by the witness, or the one it sits beside."""

    kind: Literal["run"] = "run"
    t: float
    pid: int
    argv: tuple[str, ...] = ()


class Change(_Record):
    """A change under a watched tree: the kernel's events on one path, in one read.

    `ops`: create, modify, close_write, attrib, delete, moved_from, moved_to,
    delete_self, move_self. `scan`: found by listing a directory that appeared
    (its own events came before its watch)."""

    kind: Literal["change"] = "change"
    path: str
    ops: tuple[str, ...]
    dir: bool = False
    lo: float
    hi: float
    scan: bool = False


class Exec(_Record):
    """An execve / execveat: `t` the tracer's stamp of the call, `hi` when the
    witness read it; `ok` whether it succeeded."""

    kind: Literal["exec"] = "exec"
    pid: int
    path: str
    argv: tuple[str, ...]
    ok: bool = True
    t: float
    hi: float


class ProcessExit(_Record):
    """A traced process ended (strace's `+++ exited with N +++` or `+++
    killed by SIG +++`): `status` its exit status, or `signal` (its name) when
    a signal killed it; `t` the tracer's stamp, `hi` when the witness read it."""

    kind: Literal["proc_exit"] = "proc_exit"
    pid: int
    status: int | None = None
    signal: str | None = None
    t: float
    hi: float


class SignalDelivered(_Record):
    """A signal delivered to a traced process (strace's `--- SIGINT {si_signo=
    SIGINT, si_code=SI_USER, si_pid=N, ...} ---`): `signal` its name, `code`
    the si_code, `sender` the si_pid when strace shows one; `t` the tracer's
    stamp, `hi` when the witness read it (TRACE-4)."""

    kind: Literal["signal"] = "signal"
    pid: int
    signal: str
    code: str = ""
    sender: int | None = None
    t: float
    hi: float


class Lost(_Record):
    """A window in which observations were lost (`hi` null: until the session
    ended): the inotify queue overflowed, a watch could not be added, the
    tracer's output could not be read."""

    kind: Literal["lost"] = "lost"
    what: Literal["files", "exec"]
    why: str
    lo: float
    hi: float | None = None
    path: str | None = None


class RunExited(_Record):
    kind: Literal["exit"] = "exit"
    t: float
    pid: int
    status: int | None = None  # the exit status, or None when killed by `signal`
    signal: int | None = None


class End(_Record):
    """The session ended: the run exited, the witness was told to stop, or it
    failed. `excluded_events`: events on the runtime's own files, dropped."""

    kind: Literal["end"] = "end"
    t: float
    reason: str
    excluded_events: int = 0


WitnessRecord = Annotated[
    Ready | RunStarted | Change | Exec | ProcessExit | SignalDelivered | Lost | RunExited | End,
    Field(discriminator="kind"),
]

WITNESS_KINDS: tuple[str, ...] = union_kinds(WitnessRecord)

_RECORD_ADAPTER: TypeAdapter[WitnessRecord] = TypeAdapter(WitnessRecord)


@attrs.frozen
class WitnessSession:
    """One witness process's header and records; `lines` are their 1-based file lines."""

    header: WitnessHeader
    header_line: int
    records: tuple[WitnessRecord, ...]
    lines: tuple[int, ...]

    @property
    def ready(self) -> float | None:
        return next((r.t for r in self.records if isinstance(r, Ready)), None)

    @property
    def end(self) -> float | None:
        """When the session ended (`end`, else its last stamp: the witness died)."""
        for r in reversed(self.records):
            if isinstance(r, End):
                return r.t
        stamps = [_stamp(r) for r in self.records]
        return max(stamps, default=self.header.t)


def _stamp(r: WitnessRecord) -> float:
    if isinstance(r, Change | Exec | ProcessExit | SignalDelivered):
        return r.hi
    if isinstance(r, Lost):
        return r.hi if r.hi is not None else r.lo
    return r.t


_HEADER_ADAPTER: TypeAdapter[WitnessHeader] = TypeAdapter(WitnessHeader)


def parse_witness_header(obj: Any, line: int, text: str | None = None) -> WitnessHeader:
    if obj.get("format") != WITNESS_FORMAT:
        raise TraceFormatError(line, f"format must be {WITNESS_FORMAT!r}")
    version = obj.get("version")
    if version not in WITNESS_READ_VERSIONS or isinstance(version, bool):
        readable = " or ".join(str(v) for v in WITNESS_READ_VERSIONS)
        raise TraceFormatError(
            line, f"unsupported witness version {version!r} (expected {readable})"
        )
    header: WitnessHeader = _strict(
        _HEADER_ADAPTER, json.dumps(obj) if text is None else text, line
    )
    return header


def read_witness(lines: Iterable[str]) -> list[WitnessSession]:
    """Parse a witness file: a session per header line. Blank lines are
    ignored; a torn last line (the witness was killed in its write) is dropped."""
    sessions: list[WitnessSession] = []
    header: WitnessHeader | None = None
    header_line = 0
    records: list[WitnessRecord] = []
    numbers: list[int] = []
    texts = [(n, raw.strip()) for n, raw in enumerate(lines, start=1)]
    texts = [(n, t) for n, t in texts if t]
    for i, (number, text) in enumerate(texts):
        try:
            obj = _decode(text, number)
        except TraceFormatError:
            if i == len(texts) - 1 and header is not None:
                break  # a torn last line
            raise
        if not isinstance(obj, dict):
            raise TraceFormatError(number, "a witness line must be a JSON object")
        if obj.get("kind") == "header":
            if header is not None:
                sessions.append(WitnessSession(header, header_line, tuple(records), tuple(numbers)))
            header, header_line = parse_witness_header(obj, number, text), number
            records, numbers = [], []
            continue
        if header is None:
            raise TraceFormatError(number, "first line must be the witness header (kind 'header')")
        records.append(_strict(_RECORD_ADAPTER, text, number))
        numbers.append(number)
    if header is None:
        raise TraceFormatError(1, "empty witness file: no header line")
    sessions.append(WitnessSession(header, header_line, tuple(records), tuple(numbers)))
    return sessions


def iter_witness_lines(sessions: Iterable[WitnessSession]) -> Iterator[str]:
    """The JSONL lines of witness sessions, without trailing newlines."""
    for s in sessions:
        yield s.header.model_dump_json()
        for r in s.records:
            yield r.model_dump_json()


def witness_json_schema() -> dict[str, Any]:
    """The JSON Schema of the witness file, generated from the pydantic models."""
    return jsonl_schema(
        "metis witness file (JSON Lines)",
        WITNESS_VERSION,
        WitnessHeader,
        description=(
            "Sessions: a WitnessHeader line, then WitnessRecord lines. See specs/witness.md."
        ),
        record=_RECORD_ADAPTER.json_schema(),
    )
