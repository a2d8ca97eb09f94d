"""The agent loop as a pure state machine over trace events.

`step(state, event)` returns the next state, or a `Divergence` naming the first
invariant the event breaks. States are frozen; nothing here keeps history
beyond what the invariants need, so replay is linear in the trace length for
bounded batches.

The phases (specs/loop.md):

    READY --turn_start--> PREPARING --request--> STREAMING --assistant--> BATCH
      ^                                                  \\--(no calls)--> ANSWERED
      +------------------results_sent--------------------------- BATCH
    any --interrupt--> INTERRUPTED --resume--> RESUMED --repair--> READY
    READY | ANSWERED | INTERRUPTED --run_end--> ENDED
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from ._children import spawn_violation
from ._permissions import resolve
from .trace import (
    MUTATING_KINDS,
    AskResolved,
    Assistant,
    CallClass,
    Cancel,
    Compaction,
    Decision,
    DecisionEvent,
    EffectEnd,
    EffectOutcome,
    EffectStart,
    Handshake,
    Interrupt,
    JobDone,
    Mode,
    Repair,
    Request,
    Result,
    ResultsSent,
    ResultStatus,
    Resume,
    Route,
    RuleBehavior,
    RunEnd,
    RunStatus,
    Spawn,
    StreamRepair,
    TraceEvent,
    TurnStart,
)


class Phase(StrEnum):
    READY = "ready"
    PREPARING = "preparing"
    STREAMING = "streaming"
    BATCH = "batch"
    ANSWERED = "answered"
    INTERRUPTED = "interrupted"
    RESUMED = "resumed"
    ENDED = "ended"


# Explicit enabled actions: which event kinds each phase accepts (LOOP-1).
# `job_done` may arrive in any live phase: background work is detached.
ENABLED: Mapping[Phase, frozenset[str]] = MappingProxyType(
    {
        Phase.READY: frozenset(
            {"turn_start", "repair", "run_end", "job_done", "interrupt", "spawn"}
        ),
        Phase.PREPARING: frozenset({"compaction", "request", "job_done", "interrupt"}),
        # `compaction` here is the single retry after the provider refused the
        # request as too long: the context shrinks and the turn prepares again.
        Phase.STREAMING: frozenset(
            {"stream_repair", "assistant", "job_done", "interrupt", "compaction"}
        ),
        Phase.BATCH: frozenset(
            {
                "decision",
                "ask_resolved",
                "effect_start",
                "effect_end",
                "handshake",
                "result",
                "results_sent",
                "cancel",
                "spawn",
                "job_done",
                "interrupt",
            }
        ),
        Phase.ANSWERED: frozenset({"turn_start", "run_end", "job_done", "interrupt", "compaction"}),
        Phase.INTERRUPTED: frozenset({"effect_end", "job_done", "resume", "repair", "run_end"}),
        # A resumed process may first report effects its journal shows committed.
        Phase.RESUMED: frozenset({"result", "repair", "job_done"}),
        Phase.ENDED: frozenset(),
    }
)

_FOREGROUND = (CallClass.SAFE, CallClass.QUEUE, CallClass.EXCLUSIVE)


@attrs.frozen
class Call:
    """Bookkeeping for one call occurrence of the current batch."""

    occ: str
    index: int
    decision: Decision | None = None
    approved: bool | None = None  # the answer to an ask, once resolved
    cls: CallClass | None = None
    key: str | None = None
    running: bool = False
    finished: bool = False  # foreground part done: effect_end, or handshake
    committed: bool = False
    outcome: EffectOutcome | None = None
    status: ResultStatus | None = None
    events: tuple[int, ...] = ()  # seqs of the events about this occurrence

    @property
    def admitted(self) -> bool:
        return self.decision is Decision.ALLOW or (
            self.decision is Decision.ASK and self.approved is True
        )

    @property
    def closed(self) -> bool:
        return self.status is not None


@attrs.frozen
class LoopState:
    phase: Phase = Phase.READY
    turn: int = 0
    mode: Mode = Mode.DEFAULT
    route: Route = Route.INTERACTIVE
    headless_default: Decision = Decision.DENY
    calls: tuple[Call, ...] = ()
    index_of: Mapping[str, int] = attrs.field(factory=lambda: MappingProxyType({}))
    assistant_seq: int = -1
    effects_started: bool = False
    cancelled: bool = False  # a cancel or interrupt happened in this batch
    jobs: Mapping[str, tuple[str, int]] = attrs.field(factory=lambda: MappingProxyType({}))
    headless_ask: str | None = None  # an ask that must be settled by the very next event
    last_seq: int = -1
    last_t: float = float("-inf")

    def open_occs(self) -> tuple[str, ...]:
        return tuple(c.occ for c in self.calls if not c.closed)

    def describe(self) -> str:
        running = [c.occ for c in self.calls if c.running]
        return (
            f"phase={self.phase.value} turn={self.turn} open={list(self.open_occs())} "
            f"running={running} jobs={sorted(self.jobs)}"
        )


@attrs.frozen
class Divergence:
    """The first broken invariant: a value, not an exception."""

    invariant: str
    message: str
    slice: tuple[int, ...]
    state: LoopState


Outcome = LoopState | Divergence


def initial_state(
    mode: Mode = Mode.DEFAULT,
    route: Route = Route.INTERACTIVE,
    headless_default: Decision = Decision.DENY,
) -> LoopState:
    return LoopState(mode=mode, route=route, headless_default=headless_default)


def _diverge(state: LoopState, inv: str, msg: str, *seqs: int) -> Divergence:
    return Divergence(inv, msg, tuple(sorted(set(seqs))), state)


def _with_call(state: LoopState, call: Call, seq: int, **changes: object) -> LoopState:
    new = attrs.evolve(call, events=(*call.events, seq), **changes)  # type: ignore[arg-type]
    calls = state.calls
    return attrs.evolve(state, calls=(*calls[: call.index], new, *calls[call.index + 1 :]))


def step(state: LoopState, event: TraceEvent) -> Outcome:
    """Apply one event; the next state or the first divergence it causes."""
    seq = event.seq
    if seq != state.last_seq + 1:
        return _diverge(state, "TRACE-1", f"seq {seq} follows {state.last_seq}", seq)
    if event.t < state.last_t:
        return _diverge(state, "TRACE-1", f"timestamp {event.t} goes back from {state.last_t}", seq)
    if any(c >= seq or c < 0 for c in event.causes):
        return _diverge(
            state, "TRACE-1", f"causal edge {list(event.causes)} does not point back", seq
        )
    if state.headless_ask is not None and not (
        isinstance(event, AskResolved) and event.occ == state.headless_ask
    ):
        call = state.calls[state.index_of[state.headless_ask]]
        return _diverge(
            state,
            "PERM-6",
            f"headless ask {state.headless_ask} was left waiting",
            *call.events,
            seq,
        )
    if event.kind not in ENABLED[state.phase]:
        return _diverge(
            state, "LOOP-1", f"{event.kind} is not enabled in phase {state.phase.value}", seq
        )
    state = attrs.evolve(state, last_seq=seq, last_t=event.t)
    handler = _HANDLERS[event.kind]
    return handler(state, event)


# --- the loop ------------------------------------------------------------


def _turn_start(state: LoopState, e: TurnStart) -> Outcome:
    if e.turn != state.turn + 1:
        return _diverge(state, "LOOP-1", f"turn {e.turn} follows turn {state.turn}", e.seq)
    return attrs.evolve(state, phase=Phase.PREPARING, turn=e.turn)


def _compaction(state: LoopState, e: Compaction) -> Outcome:
    calls, results = set(e.calls_removed), set(e.results_removed)
    if calls != results:
        split = sorted(calls ^ results)
        return _diverge(
            state, "CLOSE-6", f"compaction separates calls from results: {split}", e.seq
        )
    open_occs = state.open_occs()
    if open_occs:
        shown = sorted(set(open_occs) & calls or open_occs)
        return _diverge(state, "CLOSE-6", f"compaction while {shown} open", e.seq)
    if state.phase is Phase.STREAMING:
        if e.step != "retry":
            return _diverge(
                state,
                "LOOP-1",
                f"only an overflow retry compacts while streaming, not {e.step}",
                e.seq,
            )
        return attrs.evolve(state, phase=Phase.PREPARING)
    return state


def _request(state: LoopState, e: Request) -> Outcome:
    open_occs = state.open_occs()
    if open_occs:
        first = state.calls[state.index_of[open_occs[0]]]
        return _diverge(
            state,
            "CLOSE-2",
            f"provider request with {list(open_occs)} unanswered",
            *first.events,
            e.seq,
        )
    return attrs.evolve(state, phase=Phase.STREAMING, calls=(), index_of=MappingProxyType({}))


def _stream_repair(state: LoopState, e: StreamRepair) -> Outcome:
    return state


def _assistant(state: LoopState, e: Assistant) -> Outcome:
    occs = [c.occ for c in e.calls]
    if len(set(occs)) != len(occs):
        return _diverge(state, "LOOP-1", f"repeated occurrence ids in one message: {occs}", e.seq)
    if not occs:
        return attrs.evolve(state, phase=Phase.ANSWERED, assistant_seq=e.seq)
    calls = tuple(Call(occ=o, index=i, events=(e.seq,)) for i, o in enumerate(occs))
    return attrs.evolve(
        state,
        phase=Phase.BATCH,
        calls=calls,
        index_of=MappingProxyType({o: i for i, o in enumerate(occs)}),
        assistant_seq=e.seq,
        effects_started=False,
        cancelled=False,
    )


def _lookup(state: LoopState, occ: str, seq: int, inv: str = "LOOP-1") -> Call | Divergence:
    index = state.index_of.get(occ)
    if index is None:
        return _diverge(state, inv, f"{occ} is not a call of the current batch", seq)
    return state.calls[index]


# --- permissions ---------------------------------------------------------


def _decision(state: LoopState, e: DecisionEvent) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.decision is not None:
        return _diverge(state, "LOOP-1", f"{e.occ} decided twice", *call.events, e.seq)
    problem = decision_problem(e)
    if problem is not None:
        return _diverge(state, problem[0], problem[1], call.events[0], e.seq)
    state = _with_call(state, call, e.seq, decision=e.decision, cls=e.cls, key=e.key)
    if e.decision is Decision.ASK and e.route in (Route.HEADLESS, Route.BACKGROUND):
        state = attrs.evolve(state, headless_ask=e.occ)
    return state


def decision_problem(e: DecisionEvent) -> tuple[str, str] | None:
    """The PERM invariant a recorded decision breaks, most specific first."""
    f, d = e.facts, e.decision
    if f.rules and d is not Decision.DENY and any(r.behavior is RuleBehavior.DENY for r in f.rules):
        return "PERM-2", f"a deny rule matched but the decision is {d.value}"
    if (f.protected or f.secret) and d is Decision.ALLOW:
        return "PERM-3", "a protected or secret path was allowed"
    if f.mode is Mode.PLAN and f.kind in MUTATING_KINDS and d is not Decision.DENY:
        return "PERM-4", f"plan mode gave {d.value} to a {f.kind.value} call"
    if f.mode is Mode.DONT_ASK and d is Decision.ASK:
        return "PERM-5", "dontAsk returned ask"
    expected = resolve(f)
    if (expected.decision, expected.stage.value) != (d, e.stage):
        return (
            "PERM-1",
            f"recorded {d.value} at stage {e.stage}, the facts give "
            f"{expected.decision.value} at stage {expected.stage.value}",
        )
    return None


def _ask_resolved(state: LoopState, e: AskResolved) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.decision is not Decision.ASK or call.approved is not None:
        return _diverge(state, "LOOP-1", f"{e.occ} has no pending ask", *call.events, e.seq)
    if state.headless_ask == e.occ:
        wanted = state.headless_default is Decision.ALLOW
        if e.resolver != "headless-default" or e.approved != wanted:
            return _diverge(
                state,
                "PERM-6",
                f"headless ask settled by {e.resolver} as {e.approved}, not the configured default",
                *call.events,
                e.seq,
            )
        state = attrs.evolve(state, headless_ask=None)
    return _with_call(state, call, e.seq, approved=e.approved)


# --- the scheduler -------------------------------------------------------


def _effect_start(state: LoopState, e: EffectStart) -> Outcome:
    call = _lookup(state, e.occ, e.seq, inv="AUTH-1")
    if isinstance(call, Divergence):
        return call
    if call.committed:
        return _diverge(
            state, "RETRY-1", f"{e.occ} re-executed after its effect committed", *call.events, e.seq
        )
    if not call.admitted:
        return _diverge(
            state,
            "AUTH-1",
            f"{e.occ} started without an allow or approved ask",
            *call.events,
            e.seq,
        )
    if call.running or call.closed:
        return _diverge(
            state, "LOOP-1", f"{e.occ} started while running or closed", *call.events, e.seq
        )
    if not state.effects_started:
        for other in state.calls:
            if other.decision is None or (
                other.decision is Decision.ASK and other.approved is None
            ):
                return _diverge(
                    state,
                    "AUTH-2",
                    f"effects started before {other.occ} was settled",
                    *other.events,
                    e.seq,
                )
    broken = interference(state.calls, call)
    if broken is not None:
        return _diverge(state, broken[0], broken[1], *broken[2].events, e.seq)
    state = attrs.evolve(state, effects_started=True)
    return _with_call(state, call, e.seq, running=True)


class CallLike(Protocol):
    """What the scheduling checks read of a call (frozen `Call` or a replay record)."""

    @property
    def occ(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def cls(self) -> CallClass | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def running(self) -> bool: ...
    @property
    def finished(self) -> bool: ...
    @property
    def admitted(self) -> bool: ...
    @property
    def closed(self) -> bool: ...


def interference(calls: Sequence[CallLike], call: CallLike) -> tuple[str, str, Any] | None:
    """The scheduling invariant that starting `call` now would break, with the
    call it conflicts with."""
    for other in calls:
        if (
            other.running
            and other.cls in _FOREGROUND
            and (call.cls is CallClass.EXCLUSIVE or other.cls is CallClass.EXCLUSIVE)
        ):
            return "SCHED-1", f"{call.occ} ({call.cls}) overlaps {other.occ} ({other.cls})", other
    for other in calls:
        if other.index >= call.index or not other.admitted or other.finished or other.closed:
            continue
        if call.cls is CallClass.EXCLUSIVE:
            return (
                "SCHED-3",
                f"exclusive {call.occ} started before earlier {other.occ} finished",
                other,
            )
        if other.cls is CallClass.EXCLUSIVE:
            return "SCHED-3", f"{call.occ} started before exclusive {other.occ} finished", other
    if call.cls is CallClass.QUEUE:
        for other in calls:
            if other.cls is not CallClass.QUEUE or other.key != call.key or other is call:
                continue
            if other.running:
                return "SCHED-2", f"{call.occ} overlaps {other.occ} on {call.key}", other
            if other.index < call.index and other.admitted and not (other.finished or other.closed):
                return (
                    "SCHED-2",
                    f"{call.occ} overtook {other.occ} in the queue for {call.key}",
                    other,
                )
    return None


def _effect_end(state: LoopState, e: EffectEnd) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    # A Background call that fails or is cancelled before its handshake ends here too.
    if not call.running:
        return _diverge(
            state, "LOOP-1", f"{e.occ} ended without running in the foreground", *call.events, e.seq
        )
    return _with_call(
        state, call, e.seq, running=False, finished=True, committed=e.committed, outcome=e.outcome
    )


def _handshake(state: LoopState, e: Handshake) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.cls is not CallClass.BACKGROUND or not call.running:
        return _diverge(
            state,
            "SCHED-4",
            f"handshake for {e.occ}, which is not a running background call",
            *call.events,
            e.seq,
        )
    if e.job in state.jobs:
        return _diverge(
            state, "SCHED-4", f"job id {e.job} handed out twice", state.jobs[e.job][1], e.seq
        )
    jobs = MappingProxyType({**state.jobs, e.job: (e.occ, e.seq)})
    state = attrs.evolve(state, jobs=jobs)
    return _with_call(state, call, e.seq, running=False, finished=True, outcome=EffectOutcome.OK)


def _job_done(state: LoopState, e: JobDone) -> Outcome:
    paired = state.jobs.get(e.job)
    if paired is None or paired[0] != e.occ:
        return _diverge(
            state, "SCHED-4", f"completion of {e.job} for {e.occ} pairs with no handshake", e.seq
        )
    jobs = MappingProxyType({k: v for k, v in state.jobs.items() if k != e.job})
    return attrs.evolve(state, jobs=jobs)


# --- closure -------------------------------------------------------------

_NEEDS_CANCEL = (ResultStatus.CANCELLED, ResultStatus.SKIPPED)


def _result(state: LoopState, e: Result) -> Outcome:
    call = _lookup(state, e.occ, e.seq, inv="CLOSE-4")
    if isinstance(call, Divergence):
        return call
    if call.closed:
        return _diverge(state, "CLOSE-1", f"second result for {e.occ}", *call.events, e.seq)
    if state.phase is Phase.RESUMED and not call.committed:
        return _diverge(
            state,
            "LOOP-1",
            f"after resume only committed effects report results, not {e.occ}",
            *call.events,
            e.seq,
        )
    if e.status in _NEEDS_CANCEL and not state.cancelled:
        return _diverge(
            state,
            "SCHED-5",
            f"{e.occ} was {e.status.value} with no cancel or interrupt",
            *call.events,
            e.seq,
        )
    if call.running:
        return _diverge(
            state, "LOOP-1", f"result for {e.occ} while its effect runs", *call.events, e.seq
        )
    if e.status is ResultStatus.OK and not call.finished:
        return _diverge(
            state, "LOOP-1", f"ok result for {e.occ} with no finished effect", *call.events, e.seq
        )
    refused = call.decision is Decision.DENY or (
        call.decision is Decision.ASK and call.approved is False
    )
    if e.status is ResultStatus.DENIED and not refused:
        return _diverge(
            state,
            "LOOP-1",
            f"denied result for {e.occ}, which was not refused",
            *call.events,
            e.seq,
        )
    return _with_call(state, call, e.seq, status=e.status)


def _results_sent(state: LoopState, e: ResultsSent) -> Outcome:
    expected = tuple(c.occ for c in state.calls)
    missing = [c for c in state.calls if not c.closed]
    if missing:
        return _diverge(
            state,
            "CLOSE-2",
            f"results sent without a result for {missing[0].occ}",
            *missing[0].events,
            e.seq,
        )
    if tuple(e.occs) != expected:
        return _diverge(
            state,
            "CLOSE-3",
            f"results sent as {list(e.occs)}, calls were {list(expected)}",
            state.assistant_seq,
            e.seq,
        )
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))


def _cancel(state: LoopState, e: Cancel) -> Outcome:
    return attrs.evolve(state, cancelled=True)


def _interrupt(state: LoopState, e: Interrupt) -> Outcome:
    return attrs.evolve(state, phase=Phase.INTERRUPTED, cancelled=True)


def _resume(state: LoopState, e: Resume) -> Outcome:
    return attrs.evolve(state, phase=Phase.RESUMED)


def _repair(state: LoopState, e: Repair) -> Outcome:
    open_occs = state.open_occs()
    if tuple(e.stubbed) != open_occs:
        extra = sorted(set(e.stubbed) - set(open_occs))
        what = f"stubs closed or unknown {extra}" if extra else f"leaves {list(open_occs)} open"
        return _diverge(state, "CLOSE-5", f"repair {what}", state.assistant_seq, e.seq)
    # Stub results close the batch; the next request carries them in call order.
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))


# --- children and the end ------------------------------------------------


def _spawn(state: LoopState, e: Spawn) -> Outcome:
    broken = spawn_violation(e.parent_mode, e.parent_tools, e.child_mode, e.child_tools)
    if broken is not None:
        return _diverge(state, broken[0], f"spawn of {e.agent_id}: {broken[1]}", e.seq)
    return state


def _run_end(state: LoopState, e: RunEnd) -> Outcome:
    if e.status is RunStatus.COMPLETED:
        if state.phase is not Phase.ANSWERED:
            return _diverge(
                state,
                "LOOP-2",
                f"completed in phase {state.phase.value}, not after an answer",
                e.seq,
            )
        if state.jobs:
            job, (occ, seq) = next(iter(state.jobs.items()))
            return _diverge(
                state,
                "SCHED-4",
                f"run completed with job {job} of {occ} never completed",
                seq,
                e.seq,
            )
    if e.status is not RunStatus.INTERRUPTED and state.open_occs():
        return _diverge(
            state,
            "CLOSE-2",
            f"run ended with {list(state.open_occs())} unanswered",
            state.assistant_seq,
            e.seq,
        )
    return attrs.evolve(state, phase=Phase.ENDED)


_HANDLERS: Mapping[str, Callable[[LoopState, Any], Outcome]] = MappingProxyType(
    {
        "turn_start": _turn_start,
        "compaction": _compaction,
        "request": _request,
        "stream_repair": _stream_repair,
        "assistant": _assistant,
        "decision": _decision,
        "ask_resolved": _ask_resolved,
        "effect_start": _effect_start,
        "effect_end": _effect_end,
        "handshake": _handshake,
        "job_done": _job_done,
        "result": _result,
        "results_sent": _results_sent,
        "cancel": _cancel,
        "interrupt": _interrupt,
        "resume": _resume,
        "repair": _repair,
        "spawn": _spawn,
        "run_end": _run_end,
    }
)


# --- explicit enabled actions on calls -------------------------------------


def settled(state: LoopState) -> bool:
    """Batch preflight is over: every call decided, every ask answered."""
    return all(
        c.decision is not None and not (c.decision is Decision.ASK and c.approved is None)
        for c in state.calls
    )


def startable(state: LoopState) -> tuple[str, ...]:
    """Occurrences whose effect may start now without breaking an invariant."""
    if state.phase is not Phase.BATCH or not settled(state) or state.cancelled:
        return ()
    return tuple(
        c.occ
        for c in state.calls
        if c.admitted
        and not (c.running or c.finished or c.closed or c.committed)
        and interference(state.calls, c) is None
    )


def closable(state: LoopState) -> tuple[tuple[str, ResultStatus], ...]:
    """Occurrences that may be given a terminal result now, with that status."""
    if state.phase is not Phase.BATCH:
        return ()
    out: list[tuple[str, ResultStatus]] = []
    for c in state.calls:
        if c.closed or c.running:
            continue
        if c.finished:
            ok = c.outcome is EffectOutcome.OK
            out.append((c.occ, ResultStatus.OK if ok else ResultStatus.ERROR))
        elif c.decision is Decision.DENY or (c.decision is Decision.ASK and c.approved is False):
            out.append((c.occ, ResultStatus.DENIED))
        elif state.cancelled and c.decision is not None:
            out.append((c.occ, ResultStatus.SKIPPED))
    return tuple(out)
