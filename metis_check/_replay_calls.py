"""The replay's records of a batch's calls, the schedule of a wide batch, and its stop.

`_Call` is the mutable counterpart of the specification's `Call`; `_Schedule`
keeps the counters and cursors that say when the shared `interference` scan
would find a conflict (see `_replay.py`); `_Stop` unwinds a handler with a
divergence, and `_about` is the slice it names for a call.
"""

from __future__ import annotations

from typing import Any

from metis_model._interference import footprint_partners
from metis_model._loop_state import _FOREGROUND
from metis_model._loop_state import Phase
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import ResultStatus

# Enum members the handlers compare against, bound once: on Python 3.11
# `Decision.ALLOW` goes through `EnumType.__getattr__`, about 0.1 µs a lookup,
# and the replay makes several per event.
_ALLOW, _ASK, _DENY = Decision.ALLOW, Decision.ASK, Decision.DENY
_EXCLUSIVE, _QUEUE, _BACKGROUND = CallClass.EXCLUSIVE, CallClass.QUEUE, CallClass.BACKGROUND
_OK, _DENIED, _CANCELLED = ResultStatus.OK, ResultStatus.DENIED, ResultStatus.CANCELLED
_ERROR = ResultStatus.ERROR
_UNKNOWN = EffectOutcome.UNKNOWN
_CANCELLED_END = EffectOutcome.CANCELLED
_RESUMED = Phase.RESUMED
_STOPPED = (Phase.INTERRUPTED, Phase.RESUMED)

# An index past every call of any batch: "no such call".
_PAST_ALL = 1 << 62


class _Call:
    __slots__ = (
        "admitted",
        "approved",
        "call_id",
        "closed",
        "cls",
        "commit_seq",
        "committed",
        "covered",
        "decision",
        "digest",
        "events",
        "finished",
        "hooks_run",
        "index",
        "input",
        "journaled",
        "key",
        "limit_s",
        "occ",
        "outcome",
        "reads",
        "recovered",
        "running",
        "started",
        "started_t",
        "status",
        "tool",
        "vetoed",
        "writes",
    )

    def __init__(
        self, occ: str, index: int, seq: int, tool: str, call_id: str, input: Any = None
    ) -> None:
        self.occ = occ
        self.input: Any = input if input is not None else {}
        self.index = index
        self.tool = tool
        self.call_id = call_id
        self.reads: tuple[str, ...] = ()
        self.writes: tuple[str, ...] = ()
        self.hooks_run: tuple[str, ...] = ()
        self.vetoed = False
        self.started = False
        self.started_t = 0.0
        self.limit_s: float | None = None
        self.covered = False
        self.decision: Decision | None = None
        self.approved: bool | None = None
        # `Call.admitted` of the specification, kept as a field: it is read at
        # every effect start, and changes only with `decision` and `approved`.
        self.admitted = False
        self.cls: CallClass | None = None
        self.key: str | None = None
        self.running = False
        self.finished = False
        self.committed = False
        self.digest = ""
        self.commit_seq = -1
        self.journaled = False
        self.recovered = False
        self.closed = False
        self.status: ResultStatus | None = None
        self.outcome: EffectOutcome | None = None
        self.events = [seq]


def _holds_back(call: _Call) -> bool:
    """Whether `call` still holds back later calls (SCHED-2, SCHED-3): admitted,
    and neither finished nor closed."""
    return call.admitted and not (call.finished or call.closed)


class _Cursor:
    """The first of some calls, in batch order, that still holds back later ones.

    Once a call stops holding back it never does again: `finished` and
    `closed` are never reset, and admission is settled for the whole batch
    before its first effect start (AUTH-2), when cursors are made. So the
    cursor only moves forward: O(n) in all for n calls.
    """

    __slots__ = ("at", "calls")

    def __init__(self, calls: list[_Call]) -> None:
        self.calls = calls
        self.at = 0

    def first_index(self) -> int:
        """The batch index of that first call; past every index if there is none."""
        calls, at = self.calls, self.at
        while at < len(calls) and not _holds_back(calls[at]):
            at += 1
        self.at = at
        return calls[at].index if at < len(calls) else _PAST_ALL


class _Schedule:
    """What `interference` looks for in a batch, kept up to date as effects run.

    `conflicts(call)` is true exactly when `interference(calls, call)` finds a
    SCHED-1..3 conflict, and for every call whose footprint conflicts with
    another's (SCHED-6, rare), so the replay runs the shared scan only then,
    and reports what the specification reports. Made at the batch's first
    effect start, when every call is decided: a call's class, key and
    footprints never change after that (a second decision is a LOOP-1 divergence).
    """

    __slots__ = (
        "footprint",
        "held_by_any",
        "held_by_exclusive",
        "held_on_key",
        "running_exclusive",
        "running_foreground",
        "running_on_key",
    )

    def __init__(self, calls: list[_Call]) -> None:
        queues: dict[str | None, list[_Call]] = {}
        for c in calls:
            if c.cls is _QUEUE:
                queues.setdefault(c.key, []).append(c)
        self.running_foreground = 0
        self.running_exclusive = 0
        self.running_on_key = dict.fromkeys(queues, 0)
        self.held_by_any = _Cursor(calls)
        self.held_by_exclusive = _Cursor([c for c in calls if c.cls is _EXCLUSIVE])
        self.held_on_key = {key: _Cursor(queue) for key, queue in queues.items()}
        self.footprint = footprint_partners(calls)

    def conflicts(self, call: _Call) -> bool:
        """Whether starting `call` (which is not running) may break a scheduling rule."""
        if call.index in self.footprint:
            return True
        exclusive = call.cls is _EXCLUSIVE
        # SCHED-1: a running exclusive call; or, for an exclusive one, any
        # running foreground call.
        if self.running_exclusive or (exclusive and self.running_foreground):
            return True
        # SCHED-3: an earlier call still held back, where one of the two is exclusive.
        barrier = self.held_by_any if exclusive else self.held_by_exclusive
        if barrier.first_index() < call.index:
            return True
        # SCHED-2: on the call's queue key, one running or an earlier one held back.
        if call.cls is _QUEUE:
            key = call.key
            return self.running_on_key[key] > 0 or self.held_on_key[key].first_index() < call.index
        return False

    def count_running(self, call: _Call, delta: int) -> None:
        """Count `call` in (delta 1) or out of (delta -1) the running calls."""
        cls = call.cls
        if cls in _FOREGROUND:
            self.running_foreground += delta
        if cls is _EXCLUSIVE:
            self.running_exclusive += delta
        elif cls is _QUEUE:
            self.running_on_key[call.key] += delta


class _Stop(Exception):
    """Raised inside the replay to unwind with a divergence."""

    def __init__(self, invariant: str, message: str, seqs: list[int]) -> None:
        self.invariant = invariant
        self.message = message
        self.seqs = seqs


def _about(call: _Call, seq: int) -> list[int]:
    """The slice of a divergence about `call`: its events and the offending one."""
    return [*call.events, seq]


def _refused(call: _Call) -> bool:
    return call.decision is _DENY or (call.decision is _ASK and call.approved is False)
