"""Fast replay: `step` folded over a trace, with the state updated in place.

`step` in `_loop.py` is the specification; it builds a new frozen state per
event, which is clear and slow. `Replay` applies the same transitions to one
mutable state so that `check_trace` is linear with a small constant. The rule
checks themselves are shared (`decision_problem`, `interference`,
`spawn_violation`, `ENABLED`); what is repeated here is bookkeeping only, and
tests/model/test_replay.py holds the two equal — same verdict, same invariant,
same event — on every generated and broken trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any

from ._children import spawn_violation
from ._loop import (
    ENABLED,
    Call,
    Divergence,
    LoopState,
    Phase,
    decision_problem,
    interference,
)
from .trace import (
    CallClass,
    Decision,
    EffectOutcome,
    Mode,
    ResultStatus,
    Route,
    RunStatus,
    TraceEvent,
)

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
_NEEDS_CANCEL = (ResultStatus.CANCELLED, ResultStatus.SKIPPED)


# What entering a phase sets, precomputed: hashing an enum member costs a
# Python-level call, and the replay enters a phase four times a turn.
_Entry = tuple[Phase, frozenset[str], str]
_ENTRY_READY: _Entry = (Phase.READY, ENABLED[Phase.READY], Phase.READY.value)
_ENTRY_PREPARING: _Entry = (Phase.PREPARING, ENABLED[Phase.PREPARING], Phase.PREPARING.value)
_ENTRY_STREAMING: _Entry = (Phase.STREAMING, ENABLED[Phase.STREAMING], Phase.STREAMING.value)
_ENTRY_BATCH: _Entry = (Phase.BATCH, ENABLED[Phase.BATCH], Phase.BATCH.value)
_ENTRY_ANSWERED: _Entry = (Phase.ANSWERED, ENABLED[Phase.ANSWERED], Phase.ANSWERED.value)
_ENTRY_INTERRUPTED: _Entry = (
    Phase.INTERRUPTED,
    ENABLED[Phase.INTERRUPTED],
    Phase.INTERRUPTED.value,
)
_ENTRY_RESUMED: _Entry = (Phase.RESUMED, ENABLED[Phase.RESUMED], Phase.RESUMED.value)
_ENTRY_ENDED: _Entry = (Phase.ENDED, ENABLED[Phase.ENDED], Phase.ENDED.value)


class _Call:
    __slots__ = (
        "approved",
        "closed",
        "cls",
        "committed",
        "decision",
        "events",
        "finished",
        "index",
        "key",
        "occ",
        "outcome",
        "running",
        "status",
    )

    def __init__(self, occ: str, index: int, seq: int) -> None:
        self.occ = occ
        self.index = index
        self.decision: Decision | None = None
        self.approved: bool | None = None
        self.cls: CallClass | None = None
        self.key: str | None = None
        self.running = False
        self.finished = False
        self.committed = False
        self.closed = False
        self.status: ResultStatus | None = None
        self.outcome: EffectOutcome | None = None
        self.events = [seq]

    @property
    def admitted(self) -> bool:
        d = self.decision
        return d is Decision.ALLOW or (d is Decision.ASK and self.approved is True)


class _Stop(Exception):
    """Raised inside the replay to unwind with a divergence."""

    def __init__(self, invariant: str, message: str, seqs: list[int]) -> None:
        self.invariant = invariant
        self.message = message
        self.seqs = seqs


class Replay:
    """A mutable replayer of the loop state machine."""

    def __init__(self, mode: Mode, route: Route, headless_default: Decision) -> None:
        self.mode = mode
        self.route = route
        self.headless_default = headless_default
        self.phase = Phase.READY
        # Cached per phase: hashing an enum member is slow on the hot path.
        self.enabled = ENABLED[Phase.READY]
        self.counts: dict[str, dict[str, int]] = {p.value: {} for p in Phase}
        self._counts = self.counts[Phase.READY.value]
        self.headless = 0  # decisions on routes that never wait (PERM-6 checks)
        self.turn = 0
        self.calls: list[_Call] = []
        self.index_of: dict[str, int] = {}
        self.assistant_seq = -1
        self.effects_started = False
        self.cancelled = False
        self.jobs: dict[str, tuple[str, int]] = {}
        self.headless_ask: str | None = None
        self.last_seq = -1
        self.last_t = float("-inf")
        self._handlers: dict[str, Callable[[Any], None]] = {
            kind: getattr(self, "_" + kind) for phase in ENABLED.values() for kind in phase
        }

    # -- driving ---------------------------------------------------------

    def run(self, events: Iterable[TraceEvent]) -> tuple[int, Divergence | None, TraceEvent | None]:
        """Replay until the end or the first divergence: (events read, divergence, its event)."""
        count = 0
        step = self._step
        event: TraceEvent | None = None
        try:
            for event in events:
                count += 1
                step(event)
        except _Stop as stop:
            divergence = Divergence(
                stop.invariant, stop.message, tuple(sorted(set(stop.seqs))), self.snapshot()
            )
            return count, divergence, event
        return count, None, None

    def transitions(self) -> dict[tuple[str, str], int]:
        """How often each (phase, event kind) transition was taken."""
        return {
            (phase, kind): n for phase, counts in self.counts.items() for kind, n in counts.items()
        }

    def snapshot(self) -> LoopState:
        """The frozen `LoopState` this replay stands for (for reports)."""
        calls = tuple(
            Call(
                occ=c.occ,
                index=c.index,
                decision=c.decision,
                approved=c.approved,
                cls=c.cls,
                key=c.key,
                running=c.running,
                finished=c.finished,
                committed=c.committed,
                outcome=c.outcome,
                status=c.status,
                events=tuple(c.events),
            )
            for c in self.calls
        )
        return LoopState(
            phase=self.phase,
            turn=self.turn,
            mode=self.mode,
            route=self.route,
            headless_default=self.headless_default,
            calls=calls,
            index_of=MappingProxyType(dict(self.index_of)),
            assistant_seq=self.assistant_seq,
            effects_started=self.effects_started,
            cancelled=self.cancelled,
            jobs=MappingProxyType(dict(self.jobs)),
            headless_ask=self.headless_ask,
            last_seq=self.last_seq,
            last_t=self.last_t,
        )

    def _step(self, e: Any) -> None:
        # The hot path: locals and early exits, nothing allocated when all is well.
        seq = e.seq
        t = e.t
        if seq != self.last_seq + 1:
            raise _Stop("TRACE-1", f"seq {seq} follows {self.last_seq}", [seq])
        if t < self.last_t:
            raise _Stop("TRACE-1", f"timestamp {t} goes back from {self.last_t}", [seq])
        for c in e.causes:
            if c >= seq or c < 0:
                raise _Stop("TRACE-1", f"causal edge {list(e.causes)} does not point back", [seq])
        kind = e.kind
        if self.headless_ask is not None and not (
            kind == "ask_resolved" and e.occ == self.headless_ask
        ):
            call = self.calls[self.index_of[self.headless_ask]]
            raise _Stop(
                "PERM-6", f"headless ask {self.headless_ask} was left waiting", [*call.events, seq]
            )
        if kind not in self.enabled:
            raise _Stop("LOOP-1", f"{kind} is not enabled in phase {self.phase.value}", [seq])
        self.last_seq = seq
        self.last_t = t
        counts = self._counts
        self._handlers[kind](e)
        counts[kind] = counts.get(kind, 0) + 1

    def _enter(self, entry: _Entry) -> None:
        self.phase, self.enabled, name = entry
        self._counts = self.counts[name]

    def _missing(self, occ: str, seq: int, inv: str = "LOOP-1") -> _Stop:
        return _Stop(inv, f"{occ} is not a call of the current batch", [seq])

    def _open(self) -> list[str]:
        return [c.occ for c in self.calls if not c.closed]

    def _clear_batch(self) -> None:
        self.calls = []
        self.index_of = {}

    # -- the loop --------------------------------------------------------

    def _turn_start(self, e: Any) -> None:
        if e.turn != self.turn + 1:
            raise _Stop("LOOP-1", f"turn {e.turn} follows turn {self.turn}", [e.seq])
        self._enter(_ENTRY_PREPARING)
        self.turn = e.turn

    def _compaction(self, e: Any) -> None:
        calls, results = set(e.calls_removed), set(e.results_removed)
        if calls != results:
            split = sorted(calls ^ results)
            raise _Stop("CLOSE-6", f"compaction separates calls from results: {split}", [e.seq])
        open_occs = self._open()
        if open_occs:
            shown = sorted(set(open_occs) & calls or open_occs)
            raise _Stop("CLOSE-6", f"compaction while {shown} open", [e.seq])
        if self.phase is Phase.STREAMING:
            if e.step != "retry":
                raise _Stop(
                    "LOOP-1",
                    f"only an overflow retry compacts while streaming, not {e.step}",
                    [e.seq],
                )
            self._enter(_ENTRY_PREPARING)

    def _request(self, e: Any) -> None:
        open_occs = self._open()
        if open_occs:
            first = self.calls[self.index_of[open_occs[0]]]
            raise _Stop(
                "CLOSE-2",
                f"provider request with {open_occs} unanswered",
                [*first.events, e.seq],
            )
        self._enter(_ENTRY_STREAMING)
        self._clear_batch()

    def _stream_repair(self, e: Any) -> None:
        return

    def _assistant(self, e: Any) -> None:
        occs = [c.occ for c in e.calls]
        if len(set(occs)) != len(occs):
            raise _Stop("LOOP-1", f"repeated occurrence ids in one message: {occs}", [e.seq])
        self.assistant_seq = e.seq
        if not occs:
            self._enter(_ENTRY_ANSWERED)
            return
        self._enter(_ENTRY_BATCH)
        self.calls = [_Call(o, i, e.seq) for i, o in enumerate(occs)]
        self.index_of = {o: i for i, o in enumerate(occs)}
        self.effects_started = False
        self.cancelled = False

    # -- permissions -----------------------------------------------------

    def _decision(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq)
        call = self.calls[index]
        if call.decision is not None:
            raise _Stop("LOOP-1", f"{e.occ} decided twice", [*call.events, e.seq])
        problem = decision_problem(e)
        if problem is not None:
            raise _Stop(problem[0], problem[1], [call.events[0], e.seq])
        call.events.append(e.seq)
        call.decision = e.decision
        call.cls = e.cls
        call.key = e.key
        if e.route in _WAITLESS:
            self.headless += 1
            if e.decision is Decision.ASK:
                self.headless_ask = e.occ

    def _ask_resolved(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq)
        call = self.calls[index]
        if call.decision is not Decision.ASK or call.approved is not None:
            raise _Stop("LOOP-1", f"{e.occ} has no pending ask", [*call.events, e.seq])
        if self.headless_ask == e.occ:
            wanted = self.headless_default is Decision.ALLOW
            if e.resolver != "headless-default" or e.approved != wanted:
                raise _Stop(
                    "PERM-6",
                    f"headless ask settled by {e.resolver} as {e.approved}, "
                    "not the configured default",
                    [*call.events, e.seq],
                )
            self.headless_ask = None
        call.events.append(e.seq)
        call.approved = e.approved

    # -- the scheduler ---------------------------------------------------

    def _effect_start(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq, "AUTH-1")
        call = self.calls[index]
        if call.committed:
            raise _Stop(
                "RETRY-1", f"{e.occ} re-executed after its effect committed", [*call.events, e.seq]
            )
        if not call.admitted:
            raise _Stop(
                "AUTH-1", f"{e.occ} started without an allow or approved ask", [*call.events, e.seq]
            )
        if call.running or call.closed:
            raise _Stop("LOOP-1", f"{e.occ} started while running or closed", [*call.events, e.seq])
        if not self.effects_started:
            for other in self.calls:
                if other.decision is None or (
                    other.decision is Decision.ASK and other.approved is None
                ):
                    raise _Stop(
                        "AUTH-2",
                        f"effects started before {other.occ} was settled",
                        [*other.events, e.seq],
                    )
        broken = interference(self.calls, call)
        if broken is not None:
            raise _Stop(broken[0], broken[1], [*broken[2].events, e.seq])
        self.effects_started = True
        call.events.append(e.seq)
        call.running = True

    def _effect_end(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq)
        call = self.calls[index]
        if not call.running:
            raise _Stop(
                "LOOP-1", f"{e.occ} ended without running in the foreground", [*call.events, e.seq]
            )
        call.events.append(e.seq)
        call.running = False
        call.finished = True
        call.committed = e.committed
        call.outcome = e.outcome

    def _handshake(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq)
        call = self.calls[index]
        if call.cls is not CallClass.BACKGROUND or not call.running:
            raise _Stop(
                "SCHED-4",
                f"handshake for {e.occ}, which is not a running background call",
                [*call.events, e.seq],
            )
        if e.job in self.jobs:
            raise _Stop("SCHED-4", f"job id {e.job} handed out twice", [self.jobs[e.job][1], e.seq])
        self.jobs[e.job] = (e.occ, e.seq)
        call.events.append(e.seq)
        call.running = False
        call.finished = True
        call.outcome = EffectOutcome.OK

    def _job_done(self, e: Any) -> None:
        paired = self.jobs.get(e.job)
        if paired is None or paired[0] != e.occ:
            raise _Stop(
                "SCHED-4", f"completion of {e.job} for {e.occ} pairs with no handshake", [e.seq]
            )
        del self.jobs[e.job]

    # -- closure ---------------------------------------------------------

    def _result(self, e: Any) -> None:
        index = self.index_of.get(e.occ)
        if index is None:
            raise self._missing(e.occ, e.seq, "CLOSE-4")
        call = self.calls[index]
        where = [*call.events, e.seq]
        if call.closed:
            raise _Stop("CLOSE-1", f"second result for {e.occ}", where)
        if self.phase is Phase.RESUMED and not call.committed:
            raise _Stop(
                "LOOP-1",
                f"after resume only committed effects report results, not {e.occ}",
                where,
            )
        if e.status in _NEEDS_CANCEL and not self.cancelled:
            raise _Stop(
                "SCHED-5", f"{e.occ} was {e.status.value} with no cancel or interrupt", where
            )
        if call.running:
            raise _Stop("LOOP-1", f"result for {e.occ} while its effect runs", where)
        if e.status is ResultStatus.OK and not call.finished:
            raise _Stop("LOOP-1", f"ok result for {e.occ} with no finished effect", where)
        refused = call.decision is Decision.DENY or (
            call.decision is Decision.ASK and call.approved is False
        )
        if e.status is ResultStatus.DENIED and not refused:
            raise _Stop("LOOP-1", f"denied result for {e.occ}, which was not refused", where)
        call.events.append(e.seq)
        call.closed = True
        call.status = e.status

    def _results_sent(self, e: Any) -> None:
        for c in self.calls:
            if not c.closed:
                raise _Stop(
                    "CLOSE-2", f"results sent without a result for {c.occ}", [*c.events, e.seq]
                )
        expected = [c.occ for c in self.calls]
        if list(e.occs) != expected:
            raise _Stop(
                "CLOSE-3",
                f"results sent as {list(e.occs)}, calls were {expected}",
                [self.assistant_seq, e.seq],
            )
        self._enter(_ENTRY_READY)
        self._clear_batch()

    def _cancel(self, e: Any) -> None:
        self.cancelled = True

    def _interrupt(self, e: Any) -> None:
        self._enter(_ENTRY_INTERRUPTED)
        self.cancelled = True

    def _resume(self, e: Any) -> None:
        self._enter(_ENTRY_RESUMED)

    def _repair(self, e: Any) -> None:
        open_occs = self._open()
        if list(e.stubbed) != open_occs:
            extra = sorted(set(e.stubbed) - set(open_occs))
            what = f"stubs closed or unknown {extra}" if extra else f"leaves {open_occs} open"
            raise _Stop("CLOSE-5", f"repair {what}", [self.assistant_seq, e.seq])
        self._enter(_ENTRY_READY)
        self._clear_batch()

    # -- children and the end --------------------------------------------

    def _spawn(self, e: Any) -> None:
        broken = spawn_violation(e.parent_mode, e.parent_tools, e.child_mode, e.child_tools)
        if broken is not None:
            raise _Stop(broken[0], f"spawn of {e.agent_id}: {broken[1]}", [e.seq])

    def _run_end(self, e: Any) -> None:
        if e.status is RunStatus.COMPLETED:
            if self.phase is not Phase.ANSWERED:
                raise _Stop(
                    "LOOP-2",
                    f"completed in phase {self.phase.value}, not after an answer",
                    [e.seq],
                )
            if self.jobs:
                job, (occ, seq) = next(iter(self.jobs.items()))
                raise _Stop(
                    "SCHED-4",
                    f"run completed with job {job} of {occ} never completed",
                    [seq, e.seq],
                )
        open_occs = self._open()
        if e.status is not RunStatus.INTERRUPTED and open_occs:
            raise _Stop(
                "CLOSE-2", f"run ended with {open_occs} unanswered", [self.assistant_seq, e.seq]
            )
        self._enter(_ENTRY_ENDED)
