"""The write-ahead journal, and what a resumed process learns from it.

The journal (JSON Lines next to the trace) records, each line written whole,
flushed and fsynced before the step it guards:

- `run`: the run's id and the configuration needed to resume it;
- `message`: every message of the conversation, with its turn (the task is
  turn 0; a follow-up message after an answer opens the turn it starts),
  written before the trace event that reports it;
- `admit`: an admitted call occurrence, before its effect starts;
- `commit`: a committed effect's outcome and output, before the trace's
  `effect_end` (so "committed" in the trace implies the output is here);
- `end`: the run's status.

`scan_trace` reads a trace back into the state a resumed process needs;
`Recovery` combines it with the journal. A resumed run never re-executes an
effect (RETRY-1), and tells three cases apart (RETRY-3): an effect the trace
shows committed (a `commit` event, written before the journal's copy of the
output: RETRY-2) is answered from the journal; one that started and may have
changed the world without a recorded commit (it is not Safe) is stubbed
`unknown`; one that never started, or a Safe one, is stubbed `interrupted`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import Commit
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Handshake
from metis_trace import InputError
from metis_trace import Interrupt
from metis_trace import JobDone
from metis_trace import Repair
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import Resume
from metis_trace import RunEnd
from metis_trace import TraceEvent
from metis_trace import TurnStart
from metis_trace import decode_json

from . import _failpoints
from ._errors import JournalError
from ._input import open_regular
from ._input import read_fd_bounded
from ._private import open_private
from ._private import private_dirs
from ._redact import Redactor
from ._session import message_from_json
from ._session import message_to_json
from .providers import Message

# --- the journal file ----------------------------------------------------------


@attrs.frozen
class JournalState:
    """What a journal file says, read back."""

    run_id: str
    config: Mapping[str, Any]
    # (turn, "task"|"assistant"|"results"|"follow_up", msg); a follow-up opens its turn
    messages: tuple[tuple[int, str, Message], ...]
    admitted: frozenset[str]
    commits: Mapping[str, tuple[EffectOutcome, str]]
    status: str | None


class Journal:
    """Appends journal entries; each one is fsynced before `append` returns
    (unless `fsync=False`, for tests that do not kill processes)."""

    def __init__(self, path: Path, fd: int, *, fsync: bool, redactor: Redactor) -> None:
        self.path = path
        self._fd: int | None = fd
        self._fsync = fsync
        self._redact = redactor

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        run_id: str,
        config: Mapping[str, Any],
        *,
        fsync: bool = True,
        redactor: Redactor | None = None,
    ) -> Journal:
        p = Path(path)
        try:
            if p.exists() and p.stat().st_size > 0:
                raise JournalError(f"{p}: journal already exists")
            private_dirs(p.parent)
            fd = open_private(p, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise JournalError(f"{p}: cannot create journal: {exc.strerror or exc}") from exc
        _lock(p, fd)
        journal = cls(p, fd, fsync=fsync, redactor=redactor or Redactor())
        journal._append({"type": "run", "run_id": run_id, "config": dict(config)})
        return journal

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fsync: bool = True,
        redactor: Redactor | None = None,
    ) -> tuple[Journal, JournalState]:
        """Read a journal and reopen it for appending (a torn last line, left
        by a kill during its write, is dropped)."""
        p = Path(path)
        try:  # a regular file only (a FIFO or device is never opened)
            fd = open_regular(p, os.O_RDWR | os.O_APPEND)
        except InputError as exc:
            raise JournalError(str(exc)) from exc
        _lock(p, fd)  # before reading: a live writer may still be appending
        try:
            data = read_fd_bounded(fd, str(p))
            end = len(data)
            if data and not data.endswith(b"\n"):
                end = data.rfind(b"\n") + 1
            state = _parse(p, data[:end])
            if end != len(data):
                os.ftruncate(fd, end)
        except (OSError, InputError) as exc:
            os.close(fd)
            detail = exc.strerror or exc if isinstance(exc, OSError) else exc.message
            raise JournalError(f"{p}: cannot read journal: {detail}") from exc
        except JournalError:
            os.close(fd)
            raise
        return cls(p, fd, fsync=fsync, redactor=redactor or Redactor()), state

    def _append(self, entry: dict[str, Any]) -> None:
        if self._fd is None:
            raise JournalError(f"{self.path}: written after close")
        data = self._redact.json_bytes(entry) + b"\n"
        try:
            while data:
                data = data[os.write(self._fd, data) :]
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            raise JournalError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc
        if _failpoints.ARMED:
            _failpoints.reached("journal", entry["type"], entry)

    def message(self, turn: int, role: str, message: Message) -> None:
        self._append(
            {"type": "message", "turn": turn, "role": role, "message": message_to_json(message)}
        )

    def admit(self, occ: str, call_id: str, tool: str, input: Mapping[str, Any]) -> None:
        self._append(
            {"type": "admit", "occ": occ, "call_id": call_id, "tool": tool, "input": dict(input)}
        )

    def commit(self, occ: str, outcome: EffectOutcome, content: str) -> None:
        self._append({"type": "commit", "occ": occ, "outcome": outcome.value, "content": content})

    def end(self, status: str) -> None:
        self._append({"type": "end", "status": status})

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


_ROLES = ("task", "assistant", "results", "follow_up")


def _lock(path: Path, fd: int) -> None:
    # One process per run: a resume while the run's process lives is refused.
    # The kernel drops the lock when the holder dies, SIGKILL included.
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise JournalError(f"{path}: in use by another process (is the run still going?)") from exc


def _parse(path: Path, data: bytes) -> JournalState:
    run: dict[str, Any] | None = None
    messages: list[tuple[int, str, Message]] = []
    admitted: set[str] = set()
    commits: dict[str, tuple[EffectOutcome, str]] = {}
    status: str | None = None
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"{path}: line {number}"
        try:  # strict JSON: no NaN, bounded depth and integers, no repeated keys
            entry = decode_json(raw.decode("utf-8"), line=number, source=str(path))
        except UnicodeDecodeError as exc:
            raise JournalError(f"{where}: not UTF-8 text") from exc
        except InputError as exc:
            raise JournalError(str(exc)) from exc
        if not isinstance(entry, dict):
            raise JournalError(f"{where}: an entry must be a JSON object")
        kind = entry.get("type")
        try:
            if run is None:
                if kind != "run" or not isinstance(entry.get("run_id"), str):
                    raise JournalError(f"{where}: the first entry must be the run entry")
                config = entry.get("config", {})
                if not isinstance(config, dict):
                    raise JournalError(f"{where}: 'config' must be an object")
                run = entry
            elif kind == "message":
                turn, role = entry["turn"], entry["role"]
                if type(turn) is not int or role not in _ROLES:  # `true` is no turn
                    raise JournalError(f"{where}: bad 'turn' or 'role'")
                messages.append((turn, role, message_from_json(entry["message"], where)))
            elif kind == "admit":
                admitted.add(str(entry["occ"]))
            elif kind == "commit":
                commits[str(entry["occ"])] = (
                    EffectOutcome(entry["outcome"]),
                    str(entry["content"]),
                )
            elif kind == "end":
                status = str(entry["status"])
            else:
                raise JournalError(f"{where}: unknown entry type {kind!r}")
        except KeyError as exc:
            raise JournalError(f"{where}: missing field {exc.args[0]!r}") from exc
        except ValueError as exc:
            if isinstance(exc, JournalError):
                raise
            raise JournalError(f"{where}: {exc}") from exc
    if run is None:
        raise JournalError(f"{path}: empty journal")
    return JournalState(
        run_id=run["run_id"],
        config=run.get("config", {}),
        messages=tuple(messages),
        admitted=frozenset(admitted),
        commits=commits,
        status=status,
    )


# --- reading a trace back ------------------------------------------------------


@attrs.define
class TracedCall:
    """One occurrence of the last batch, as far as the trace tells."""

    occ: str
    call_id: str
    tool: str
    cls: CallClass | None = None  # its decision's class
    started: int | None = None  # seq of effect_start
    ended: int | None = None  # seq of effect_end or handshake
    committed: bool = False  # a commit event was seen
    outcome: EffectOutcome | None = None  # the commit's, or the end's
    result: tuple[ResultStatus, str] | None = None
    last: int = -1  # seq of the latest event about it


@attrs.define
class TraceScan:
    """The loop state at the end of a trace, in the runtime's own reading
    (the phases of specs/loop.md)."""

    phase: str = "ready"
    turn: int = 0
    assistant_turns: list[int] = attrs.field(factory=list)
    batch_turn: int | None = None
    calls: list[TracedCall] = attrs.field(factory=list)
    jobs: dict[str, tuple[str, int]] = attrs.field(factory=dict)  # job -> (occ, handshake)
    last_seq: int = -1
    interrupt_seq: int | None = None
    resume_seq: int | None = None
    status: str | None = None

    def open_calls(self) -> list[TracedCall]:
        return [c for c in self.calls if c.result is None]


def scan_trace(events: Sequence[TraceEvent]) -> TraceScan:
    s = TraceScan()
    by_occ: dict[str, TracedCall] = {}
    for e in events:
        s.last_seq = e.seq
        if isinstance(e, TurnStart):
            s.phase, s.turn = "preparing", e.turn
        elif isinstance(e, Request):
            s.phase, s.calls, by_occ, s.batch_turn = "streaming", [], {}, None
        elif isinstance(e, Assistant):
            s.assistant_turns.append(e.turn)
            s.phase = "batch" if e.calls else "answered"
            s.calls = [TracedCall(c.occ, c.call_id, c.tool, last=e.seq) for c in e.calls]
            by_occ = {c.occ: c for c in s.calls}
            s.batch_turn = e.turn if e.calls else None
        elif isinstance(e, ResultsSent | Repair):
            s.phase, s.calls, by_occ, s.batch_turn = "ready", [], {}, None
            s.interrupt_seq = s.resume_seq = None
        elif isinstance(e, Interrupt):
            s.phase, s.interrupt_seq = "interrupted", e.seq
        elif isinstance(e, Resume):
            s.phase, s.resume_seq = "resumed", e.seq
        elif isinstance(e, RunEnd):
            s.phase, s.status = "ended", e.status.value
        elif isinstance(e, JobDone):
            s.jobs.pop(e.job, None)
        elif isinstance(e, Handshake):
            s.jobs[e.job] = (e.occ, e.seq)
        occ = getattr(e, "occ", None)
        call = by_occ.get(occ) if isinstance(occ, str) else None
        if call is None or isinstance(e, JobDone):
            continue
        call.last = e.seq
        if isinstance(e, DecisionEvent):
            call.cls = e.cls
        elif isinstance(e, EffectStart):
            call.started = e.seq
        elif isinstance(e, Commit):
            call.committed, call.outcome = True, e.outcome
        elif isinstance(e, EffectEnd):
            call.ended, call.outcome = e.seq, e.outcome
        elif isinstance(e, Handshake):
            call.ended, call.outcome = e.seq, EffectOutcome.OK
        elif isinstance(e, Result):
            call.result = (e.status, e.content)
    return s


def read_state_messages(
    state: JournalState, scan: TraceScan
) -> tuple[list[Message], Message | None]:
    """The history consistent with the trace, and the open batch's results
    message if the journal already holds it.

    Messages the journal wrote ahead of a trace event that never came (an
    assistant message whose `assistant` event was not written) are dropped.
    """
    traced = set(scan.assistant_turns)
    history: list[Message] = []
    batch_results: Message | None = None
    for turn, role, message in state.messages:
        if role == "follow_up":  # kept once its turn started (its turn_start is traced)
            if turn <= scan.turn:
                history.append(message)
            continue
        if role != "task" and turn not in traced:
            continue
        if role == "results" and turn == scan.batch_turn:
            batch_results = message
            continue
        history.append(message)
    return history, batch_results
