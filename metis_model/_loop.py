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
    ANSWERED --turn_start--> PREPARING (a follow-up message)
    READY | ANSWERED | INTERRUPTED --run_end--> ENDED
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from metis_trace import (
    MUTATING_KINDS,
    NOT_JOURNALED,
    AskResolved,
    Assistant,
    CallClass,
    Cancel,
    CancelCause,
    Commit,
    Compaction,
    Decision,
    DecisionEvent,
    EffectEnd,
    EffectOutcome,
    EffectStart,
    Handshake,
    HookRef,
    HookRun,
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
    ToolKind,
    TraceEvent,
    TurnStart,
    content_digest,
)

from ._causes import (
    SOURCE_KINDS,
    STOP_SOURCES,
    cancel_source_problem,
    cancelled_end_problem,
    cancelled_result_problem,
    limit_problem,
    named_source,
)
from ._children import spawn_violation
from ._context import transcript_problem
from ._derive import Recorded, facts_problem
from ._permissions import resolve


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
#
# Narrower than "anything a runtime might do" on purpose: a spawn happens only
# in a batch (a decided `spawn_agent` call starts it), a repair only after a
# resume (the process that repairs is the one that read the trace), context
# control only while preparing a request, and a resumed process has no job
# of its own (its predecessor's are reported lost before `resume`).
#
# A stop's sources (`signal`, `stop_request`) may be recorded in every phase
# of a live run; a sink's error only in a batch (SCHED-5).
_STOPS = ("signal", "stop_request")
ENABLED: Mapping[Phase, frozenset[str]] = MappingProxyType(
    {
        Phase.READY: frozenset({"turn_start", "run_end", "job_done", "interrupt", *_STOPS}),
        Phase.PREPARING: frozenset({"compaction", "request", "job_done", "interrupt", *_STOPS}),
        # `compaction` here is the single retry after the provider refused the
        # request as too long: the context shrinks and the turn prepares again.
        Phase.STREAMING: frozenset(
            {"stream_repair", "assistant", "job_done", "interrupt", "compaction", *_STOPS}
        ),
        Phase.BATCH: frozenset(
            {
                "hook",
                "decision",
                "ask_resolved",
                "effect_start",
                "commit",
                "effect_end",
                "handshake",
                "result",
                "results_sent",
                "cancel",
                "spawn",
                "job_done",
                "interrupt",
                "sink_error",
                *_STOPS,
            }
        ),
        # After an answer: the run ends, or a follow-up message starts a turn.
        Phase.ANSWERED: frozenset({"turn_start", "run_end", "job_done", "interrupt", *_STOPS}),
        # An effect still running when the run was interrupted may commit and end.
        Phase.INTERRUPTED: frozenset({"commit", "effect_end", "job_done", "resume", "run_end"}),
        # A resumed process may first report effects its trace shows committed.
        Phase.RESUMED: frozenset({"result", "repair"}),
        Phase.ENDED: frozenset(),
    }
)

_FOREGROUND = (CallClass.SAFE, CallClass.QUEUE, CallClass.EXCLUSIVE)
_WRITERS = (CallClass.QUEUE, CallClass.EXCLUSIVE)
_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
# How far a timeout's cancel may come before its limit, in seconds: trace
# timestamps are rounded to microseconds, the timer fires on the same clock.
TIMEOUT_SLACK_S = 1e-3


@attrs.frozen
class Call:
    """Bookkeeping for one call occurrence of the current batch."""

    occ: str
    index: int
    tool: str = ""
    call_id: str = ""
    decision: Decision | None = None
    approved: bool | None = None  # the answer to an ask, once resolved
    cls: CallClass | None = None
    key: str | None = None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    hooks_run: tuple[str, ...] = ()  # hooks of the header that ran on it
    vetoed: bool = False  # one of them vetoed it
    running: bool = False
    started: bool = False  # an effect_start was seen
    started_t: float = 0.0  # the latest effect_start's timestamp
    limit_s: float | None = None  # the time limit its effect_start recorded
    finished: bool = False  # foreground part done: effect_end, or handshake
    committed: bool = False  # a commit event was seen
    # Of the commit (RETRY-2): its output's digest ("": none), its seq when
    # written outside an interrupt (else -1), and whether the journal holds the
    # output (the committing process's effect_end came right after it).
    digest: str = ""
    commit_seq: int = -1
    journaled: bool = False
    recovered: bool = False  # that commit was recovered from its exit record (RETRY-4)
    covered: bool = False  # a timeout's cancel names it
    outcome: EffectOutcome | None = None
    status: ResultStatus | None = None
    events: tuple[int, ...] = ()  # seqs of the events about this occurrence
    # The call's input as the assistant message holds it (AUTH-4's deriver).
    input: Mapping[str, Any] = attrs.field(factory=dict, eq=False, hash=False, repr=False)

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
    tools: frozenset[str] | None = None  # the header's tool surface (None: no header)
    hooks: tuple[HookRef, ...] = ()  # the header's hooks in force
    calls: tuple[Call, ...] = ()
    index_of: Mapping[str, int] = attrs.field(factory=lambda: MappingProxyType({}))
    assistant_seq: int = -1
    effects_started: bool = False
    cancelled: bool = False  # a cancel of the whole batch, or an interrupt, happened
    # SCHED-5's sources: the trace records them (version 3 on); the source
    # events no cancel or interrupt used yet (seq -> kind); and whether the
    # batch's stop (a cancel of the whole batch, or an interrupt naming its
    # source) explains an effect that ends cancelled.
    causes_recorded: bool = True
    sources: Mapping[int, str] = attrs.field(factory=lambda: MappingProxyType({}))
    stop_sourced: bool = False
    jobs: Mapping[str, tuple[str, int]] = attrs.field(factory=lambda: MappingProxyType({}))
    headless_ask: str | None = None  # an ask that must be settled by the very next event
    last_seq: int = -1
    last_t: float = float("-inf")
    # The header's record of the gate's settings (`meta.permissions`), when
    # it has one: AUTH-4 checks each decision's facts against it.
    recorded: Recorded | None = attrs.field(default=None, eq=False, hash=False, repr=False)

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
    tools: frozenset[str] | None = None,
    hooks: tuple[HookRef, ...] = (),
    recorded: Recorded | None = None,
    causes_recorded: bool = True,
) -> LoopState:
    return LoopState(
        mode=mode,
        route=route,
        headless_default=headless_default,
        tools=tools,
        hooks=hooks,
        recorded=recorded,
        causes_recorded=causes_recorded,
    )


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
    rerun = rerun_after_stop(state, event)
    if rerun is not None:
        return _diverge(
            state, "RETRY-1", f"{rerun.occ} re-executed after its effect committed", *rerun.events
        )
    if event.kind not in ENABLED[state.phase]:
        return _diverge(
            state, "LOOP-1", f"{event.kind} is not enabled in phase {state.phase.value}", seq
        )
    state = attrs.evolve(state, last_seq=seq, last_t=event.t)
    handler = _HANDLERS[event.kind]
    return handler(state, event)


def rerun_after_stop(state: LoopState, event: TraceEvent) -> Call | None:
    """A committed call started again after an interrupt (before or after the
    resume): RETRY-1, before the phase rejects the start (LOOP-1)."""
    if event.kind != "effect_start" or state.phase not in (Phase.INTERRUPTED, Phase.RESUMED):
        return None
    index = state.index_of.get(event.occ)
    if index is None or not state.calls[index].committed:
        return None
    call = state.calls[index]
    return attrs.evolve(call, events=(*call.events, event.seq))


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
    if state.phase is Phase.STREAMING and e.step != "retry":
        return _diverge(
            state, "LOOP-1", f"only an overflow retry compacts while streaming, not {e.step}", e.seq
        )
    problem = transcript_problem(e.messages)
    if problem is not None:
        return _diverge(
            state,
            "CLOSE-8",
            f"{e.step} left a transcript that is not provider-valid: {problem}",
            e.seq,
        )
    if state.phase is Phase.STREAMING:
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
    calls = tuple(
        Call(occ=c.occ, index=i, tool=c.tool, call_id=c.call_id, events=(e.seq,), input=c.input)
        for i, c in enumerate(e.calls)
    )
    return attrs.evolve(
        state,
        phase=Phase.BATCH,
        calls=calls,
        index_of=MappingProxyType({o: i for i, o in enumerate(occs)}),
        assistant_seq=e.seq,
        effects_started=False,
        cancelled=False,
        stop_sourced=False,
    )


def _lookup(state: LoopState, occ: str, seq: int, inv: str = "LOOP-1") -> Call | Divergence:
    index = state.index_of.get(occ)
    if index is None:
        return _diverge(state, inv, f"{occ} is not a call of the current batch", seq)
    return state.calls[index]


# --- hooks and permissions -------------------------------------------------


def hooks_for(hooks: Sequence[HookRef], tool: str) -> tuple[str, ...]:
    """The ids of the hooks in force that cover `tool` (a glob over tool names)."""
    return tuple(h.id for h in hooks if fnmatch.fnmatchcase(tool, h.matcher))


def hook_problem(hooks: Sequence[HookRef], decided: bool, e: HookRun) -> str | None:
    """CHILD-6 for a hook's run: it is in force, and runs before the decision."""
    if all(h.id != e.hook for h in hooks):
        return f"hook {e.hook} ran on {e.occ} but is not in force"
    if decided:
        return f"hook {e.hook} ran on {e.occ} after its decision"
    return None


def _hook(state: LoopState, e: HookRun) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    problem = hook_problem(state.hooks, call.decision is not None, e)
    if problem is not None:
        return _diverge(state, "CHILD-6", problem, *call.events, e.seq)
    return _with_call(
        state, call, e.seq, hooks_run=(*call.hooks_run, e.hook), vetoed=call.vetoed or e.vetoed
    )


def enforcement_problem(
    hooks: Sequence[HookRef], tool: str, hooks_run: Sequence[str], vetoed: bool, d: Decision
) -> str | None:
    """CHILD-6 at a decision: a veto became a deny, and unless the gate denied
    first, every hook that covers the call ran before it."""
    if vetoed:
        return (
            None if d is Decision.DENY else f"a hook vetoed the call, but it was decided {d.value}"
        )
    if d is Decision.DENY or not hooks:
        return None
    missing = [h for h in hooks_for(hooks, tool) if h not in hooks_run]
    return f"hooks {missing} did not run before the decision" if missing else None


def _decision(state: LoopState, e: DecisionEvent) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.decision is not None:
        return _diverge(state, "LOOP-1", f"{e.occ} decided twice", *call.events, e.seq)
    problem = decision_problem(e)
    if problem is not None:
        return _diverge(state, problem[0], problem[1], call.events[0], e.seq)
    keyed = queue_key_problem(e)
    if keyed is not None:
        return _diverge(state, "SCHED-2", keyed, call.events[0], e.seq)
    derived = derived_problem(state.recorded, call.tool, call.input, e)
    if derived is not None:
        return _diverge(state, "AUTH-4", f"{e.occ}: {derived}", call.events[0], e.seq)
    enforced = enforcement_problem(state.hooks, call.tool, call.hooks_run, call.vetoed, e.decision)
    if enforced is not None:
        return _diverge(state, "CHILD-6", f"{e.occ}: {enforced}", *call.events, e.seq)
    state = _with_call(
        state,
        call,
        e.seq,
        decision=e.decision,
        cls=e.cls,
        key=e.key,
        reads=e.reads,
        writes=e.writes,
    )
    if e.decision is Decision.ASK and e.route in _WAITLESS:
        state = attrs.evolve(state, headless_ask=e.occ)
    return state


def _batch_writes(e: DecisionEvent) -> tuple[str, ...] | None:
    """The write footprint a decision records, where it states the call's
    writes: a Background call's detached work is outside its batch, so its
    footprint is empty by design (specs/scheduler.md, SCHED-6)."""
    return None if e.cls is CallClass.BACKGROUND else tuple(e.writes)


def derived_problem(
    recorded: Recorded | None, tool: str, input: Mapping[str, Any], e: DecisionEvent
) -> str | None:
    """AUTH-4: a fact the header's recorded settings give for the call that
    the decision's facts lack (`_derive`), or None."""
    if recorded is None:
        return None
    return facts_problem(recorded, tool, input, e.facts, (*e.reads, *e.writes), _batch_writes(e))[1]


def derived_exercised(
    recorded: Recorded | None, tool: str, input: Mapping[str, Any], e: DecisionEvent
) -> bool:
    """Whether AUTH-4 had something to check at this decision: the deriver was
    sure of a fact."""
    if recorded is None:
        return False
    return facts_problem(recorded, tool, input, e.facts, (*e.reads, *e.writes), _batch_writes(e))[0]


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
    if state.tools is not None and call.tool not in state.tools:
        return _diverge(
            state,
            "AUTH-3",
            f"{e.occ} runs {call.tool!r}, which is not in the header's tool surface",
            *call.events,
            e.seq,
        )
    if call.running or call.closed:
        return _diverge(
            state, "LOOP-1", f"{e.occ} started while running or closed", *call.events, e.seq
        )
    if state.cancelled:
        return _diverge(
            state, "SCHED-5", f"{e.occ} started after its batch was cancelled", *call.events, e.seq
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
    return _with_call(
        state, call, e.seq, running=True, started=True, started_t=e.t, limit_s=e.limit_s
    )


class CallLike(Protocol):
    """What the scheduling checks read of a call (frozen `Call` or a replay record)."""

    @property
    def occ(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def call_id(self) -> str: ...
    @property
    def cls(self) -> CallClass | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def reads(self) -> tuple[str, ...]: ...
    @property
    def writes(self) -> tuple[str, ...]: ...
    @property
    def running(self) -> bool: ...
    @property
    def started(self) -> bool: ...
    @property
    def recovered(self) -> bool: ...
    @property
    def started_t(self) -> float: ...
    @property
    def limit_s(self) -> float | None: ...
    @property
    def finished(self) -> bool: ...
    @property
    def committed(self) -> bool: ...
    @property
    def admitted(self) -> bool: ...
    @property
    def closed(self) -> bool: ...


def paths_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two footprints share a path: one path is the other or lies below it."""
    for x in a:
        for y in b:
            if x == y or x == "/" or y == "/":
                return True
            short, long = (x, y) if len(x) < len(y) else (y, x)
            if long.startswith(short.rstrip("/") + "/"):
                return True
    return False


def footprints_conflict(a: CallLike, b: CallLike) -> bool:
    """SCHED-6's relation: one is Safe and reads inside what the other, a Queue
    or Exclusive call, writes."""
    if a.cls is CallClass.SAFE and b.cls in _WRITERS:
        return paths_overlap(a.reads, b.writes)
    if b.cls is CallClass.SAFE and a.cls in _WRITERS:
        return paths_overlap(b.reads, a.writes)
    return False


QUEUE_FILE_KEY = "file:"


def queue_edit(e: DecisionEvent) -> bool:
    """Whether SCHED-2's key clause applies to the decision: a Queue `edit` call."""
    return e.cls is CallClass.QUEUE and e.facts.kind is ToolKind.EDIT


def _within(path: str, named: str) -> bool:
    """Whether `path` is `named` or lies below it."""
    return path == named or path.startswith(named.rstrip("/") + "/")


def queue_key_problem(e: DecisionEvent) -> str | None:
    """SCHED-2's key clause: a Queue `edit` call writes only within what its
    key names (`file:PATH`: that file, or what lies below the path, as a
    footprint path covers), so that every edit of one file waits in one queue.
    An edit call that writes more, or under another key, could overlap a
    Queue edit of the same file under that file's key: a lost parallel edit.
    (A Queue `exec` call, an MCP server's or an agent tool's, writes nothing
    a key could name: not checked.)"""
    if not queue_edit(e):
        return None
    key = e.key or ""
    named = key[len(QUEUE_FILE_KEY) :] if key.startswith(QUEUE_FILE_KEY) else None
    for path in e.writes:
        if named is None or not _within(path, named):
            return (
                f"{e.occ}: a Queue edit call writes {path}, which its key "
                f"{key or 'None'} does not name"
            )
    return None


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
    if call.cls is CallClass.SAFE or call.cls in _WRITERS:
        for other in calls:
            if other is call or not footprints_conflict(call, other):
                continue
            if other.running:
                return (
                    "SCHED-6",
                    f"{call.occ} overlaps {other.occ}, whose footprint it shares",
                    other,
                )
            if other.index < call.index and other.admitted and not (other.finished or other.closed):
                return (
                    "SCHED-6",
                    f"{call.occ} started before earlier {other.occ}, whose footprint it shares",
                    other,
                )
    return None


def _commit(state: LoopState, e: Commit) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if not call.running or call.committed:
        return _diverge(
            state,
            "LOOP-1",
            f"commit of {e.occ}, which is not running uncommitted",
            *call.events,
            e.seq,
        )
    if e.recovered and state.phase is not Phase.INTERRUPTED:
        return _diverge(
            state,
            "RETRY-4",
            f"recovered commit of {e.occ} outside an interrupt",
            *call.events,
            e.seq,
        )
    return _with_call(
        state,
        call,
        e.seq,
        committed=True,
        recovered=e.recovered,
        digest=e.digest,
        commit_seq=-1 if state.phase is Phase.INTERRUPTED else e.seq,
    )


def journaled(commit_seq: int, end_seq: int) -> bool:
    """RETRY-2: whether a committed call's `effect_end` proves its output was
    journaled. The runtime writes the `commit`, the journal's entry, then the
    `effect_end` in one synchronous step, so an end right after a commit
    written outside an interrupt is the committing process's own (a resuming
    process first writes an `interrupt`)."""
    return commit_seq >= 0 and end_seq == commit_seq + 1


def commit_report_problem(
    occ: str,
    committed: bool,
    outcome: EffectOutcome | None,
    digest: str,
    journaled: bool,
    status: ResultStatus,
    content: str,
) -> str | None:
    """RETRY-2: a result of a call the trace shows committed reports that
    commit: `ok` when the committed effect ended `ok`, `error` otherwise, and
    the committed output (the commit's digest), a resumed process's result
    too. The one exception is a resumed result saying the output was not
    journaled (`NOT_JOURNALED`), allowed only when the trace does not prove
    the journal holds it."""
    if not committed or outcome is None:
        return None
    want = ResultStatus.OK if outcome is EffectOutcome.OK else ResultStatus.ERROR
    if status is not want:
        return f"{occ}'s result is {status.value}, but its committed effect ended {outcome.value}"
    if not digest or content_digest(content) == digest:
        return None
    if content == NOT_JOURNALED:
        if not journaled:
            return None
        return (
            f"{occ} is answered as not journaled, but its effect_end right after the"
            " commit shows the journal holds its output"
        )
    return (
        f"{occ}'s result does not carry its committed output"
        f" (commit digest {digest[:12]}, result {content_digest(content)[:12]})"
    )


def _effect_end(state: LoopState, e: EffectEnd) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    # A Background call that fails or is cancelled before its handshake ends here too.
    if not call.running:
        return _diverge(
            state, "LOOP-1", f"{e.occ} ended without running in the foreground", *call.events, e.seq
        )
    if e.outcome is EffectOutcome.DETACHED:
        return _diverge(
            state,
            "LOOP-1",
            f"{e.occ}'s effect ended detached: only a background job's completion is",
            *call.events,
            e.seq,
        )
    if e.outcome is EffectOutcome.UNKNOWN and state.phase is not Phase.INTERRUPTED:
        return _diverge(
            state,
            "LOOP-1",
            f"{e.occ}'s outcome is unknown outside an interrupt",
            *call.events,
            e.seq,
        )
    if e.committed != call.committed:
        said = "committed" if e.committed else "uncommitted"
        return _diverge(
            state,
            "RETRY-2",
            f"{e.occ} ended {said}, but the trace holds {_commits(call.committed)}",
            *call.events,
            e.seq,
        )
    ended = cancelled_end_problem(e.occ, e.outcome, e.committed, call.covered, state.stop_sourced)
    if ended is not None:
        return _diverge(state, "SCHED-5", ended, *call.events, e.seq)
    return _with_call(
        state,
        call,
        e.seq,
        running=False,
        finished=True,
        outcome=e.outcome,
        journaled=e.committed and journaled(call.commit_seq, e.seq),
    )


def _commits(committed: bool) -> str:
    return "its commit" if committed else "no commit of it"


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


def detached_problem(e: JobDone) -> str | None:
    """SCHED-4: a job's completion says `detached` exactly when it names the
    process group it left running."""
    if e.outcome is EffectOutcome.DETACHED and (e.pid is None or e.pid <= 0):
        return f"{e.job} of {e.occ} detached without the process group it left running"
    if e.outcome is not EffectOutcome.DETACHED and e.pid is not None:
        return f"{e.job} of {e.occ} names process group {e.pid} but ended {e.outcome.value}"
    return None


def _job_done(state: LoopState, e: JobDone) -> Outcome:
    paired = state.jobs.get(e.job)
    if paired is None or paired[0] != e.occ:
        return _diverge(
            state, "SCHED-4", f"completion of {e.job} for {e.occ} pairs with no handshake", e.seq
        )
    detached = detached_problem(e)
    if detached is not None:
        return _diverge(state, "SCHED-4", detached, paired[1], e.seq)
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
            "RETRY-2",
            f"after resume only effects the trace shows committed are answered, not {e.occ}",
            *call.events,
            e.seq,
        )
    if e.status in _NEEDS_CANCEL and not (
        state.cancelled or (call.covered and e.status is ResultStatus.CANCELLED)
    ):
        return _diverge(
            state,
            "SCHED-5",
            f"{e.occ} was {e.status.value} with no cancel covering it or interrupt",
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
    closed_as = cancelled_result_problem(e.occ, call.outcome, call.committed, e.status)
    if closed_as is not None:
        return _diverge(state, "SCHED-5", closed_as, *call.events, e.seq)
    reported = commit_report_problem(
        e.occ, call.committed, call.outcome, call.digest, call.journaled, e.status, e.content
    )
    if reported is not None:
        return _diverge(state, "RETRY-2", reported, *call.events, e.seq)
    return _with_call(state, call, e.seq, status=e.status)


def ids_problem(calls: Sequence[CallLike], sent: Sequence[str]) -> tuple[str, str] | None:
    """CLOSE-4 / CLOSE-3 for the ids a results message held: each is an id of
    a call of the batch, and they are the calls' ids, one per occurrence, in
    call order."""
    expected = [c.call_id for c in calls]
    stray = sorted(set(sent) - set(expected))
    if stray:
        return "CLOSE-4", f"the results message holds {stray}, which no call of the batch has"
    if list(sent) != expected:
        return "CLOSE-3", f"the results message held {list(sent)}, the calls were {expected}"
    return None


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
    wrong = ids_problem(state.calls, e.call_ids)
    if wrong is not None:
        return _diverge(state, wrong[0], wrong[1], state.assistant_seq, e.seq)
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))


def cancel_problem(
    state_calls: Sequence[CallLike],
    index_of: Mapping[str, int],
    e: Cancel,
    causes_recorded: bool = True,
) -> str | None:
    """SCHED-5 for a cancel: only a timeout names the calls it covers, and
    those are running past its limit, the one each recorded (when the trace
    records limits); any other cause covers the whole batch."""
    timeout = e.cause is CancelCause.TIMEOUT
    if not timeout:
        return f"a {e.cause.value} cancel names calls {list(e.occs)}" if e.occs else None
    if not e.occs or e.limit_s is None:
        return "a timeout's cancel must name the calls it covers and its limit"
    for occ in e.occs:
        index = index_of.get(occ)
        call = state_calls[index] if index is not None else None
        if call is None or not call.running:
            return f"the timeout covers {occ}, which is not running"
        if causes_recorded:
            wrong = limit_problem(occ, call.limit_s, e.limit_s)
            if wrong is not None:
                return wrong
        if e.t - call.started_t < e.limit_s - TIMEOUT_SLACK_S:
            ran = e.t - call.started_t
            return f"the timeout cancels {occ} after {ran:.6f} s, before its {e.limit_s:g} s limit"
    return None


def _without(sources: Mapping[int, str], seq: int | None) -> Mapping[int, str]:
    if seq is None:
        return sources
    return MappingProxyType({k: v for k, v in sources.items() if k != seq})


def _cancel(state: LoopState, e: Cancel) -> Outcome:
    problem = cancel_problem(state.calls, state.index_of, e, state.causes_recorded)
    used: int | None = None
    if problem is None and state.causes_recorded:
        problem, used = cancel_source_problem(e.cause, e.causes, state.sources)
    if problem is not None:
        return _diverge(state, "SCHED-5", problem, state.assistant_seq, e.seq)
    state = attrs.evolve(state, sources=_without(state.sources, used))
    if not e.occs:
        return attrs.evolve(state, cancelled=True, stop_sourced=True)
    for occ in e.occs:
        call = state.calls[state.index_of[occ]]
        state = _with_call(state, call, e.seq, covered=True)
    return state


def _source(state: LoopState, e: TraceEvent) -> Outcome:
    """A `signal`, `stop_request` or `sink_error`: a source a cancel may name."""
    return attrs.evolve(state, sources=MappingProxyType({**state.sources, e.seq: e.kind}))


def _interrupt(state: LoopState, e: Interrupt) -> Outcome:
    used = named_source(e.causes, state.sources, STOP_SOURCES)
    sourced = used is not None or not state.causes_recorded
    return attrs.evolve(
        state,
        phase=Phase.INTERRUPTED,
        cancelled=True,
        stop_sourced=state.stop_sourced or sourced,
        sources=_without(state.sources, used),
    )


def _resume(state: LoopState, e: Resume) -> Outcome:
    return attrs.evolve(state, phase=Phase.RESUMED)


def may_have_happened(call: CallLike) -> bool:
    """RETRY-3: its effect started and may have changed the world (a Safe call
    has no side effects; a committed one did)."""
    return call.started and (call.committed or call.cls is not CallClass.SAFE)


def committed_stub(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-2: a repair never stubs a call the trace shows committed (as
    interrupted or unknown): a resumed process answers it with its commit."""
    stubbed = set(e.stubbed)
    for c in calls:
        if c.occ in stubbed and c.committed:
            return f"repair stubs {c.occ}, whose commit the trace holds"
    return None


def stub_problem(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-3: a stub is `unknown` exactly when the call's effect may have happened."""
    stubbed = set(e.stubbed)
    extra = sorted(set(e.unknown) - stubbed)
    if extra:
        return f"marks {extra} unknown without stubbing them"
    unknown = set(e.unknown)
    for c in calls:
        if c.occ not in stubbed:
            continue
        if may_have_happened(c) and c.occ not in unknown:
            return f"stubs {c.occ} as interrupted, but its effect may have happened"
        if not may_have_happened(c) and c.occ in unknown:
            return f"stubs {c.occ} as unknown, but it had no effect (never started, or Safe)"
    return None


def recovered_problem(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-4: the repair names exactly the calls whose commit was recovered."""
    claimed = set(e.recovered)
    actual = {c.occ for c in calls if c.recovered}
    if claimed - actual:
        missing = sorted(claimed - actual)
        return f"names {missing} recovered, but no recovered commit of them precedes it"
    if actual - claimed:
        return f"does not name {sorted(actual - claimed)}, whose commit was recovered"
    return None


def _repair(state: LoopState, e: Repair) -> Outcome:
    open_occs = state.open_occs()
    if tuple(e.stubbed) != open_occs:
        extra = sorted(set(e.stubbed) - set(open_occs))
        what = f"stubs closed or unknown {extra}" if extra else f"leaves {list(open_occs)} open"
        return _diverge(state, "CLOSE-5", f"repair {what}", state.assistant_seq, e.seq)
    stubbed = committed_stub(state.calls, e)
    if stubbed is not None:
        return _diverge(state, "RETRY-2", stubbed, state.assistant_seq, e.seq)
    stubs = stub_problem(state.calls, e)
    if stubs is not None:
        return _diverge(state, "RETRY-3", f"repair {stubs}", state.assistant_seq, e.seq)
    recovered = recovered_problem(state.calls, e)
    if recovered is not None:
        return _diverge(state, "RETRY-4", f"repair {recovered}", state.assistant_seq, e.seq)
    wrong = ids_problem(state.calls, e.call_ids)
    if wrong is not None:
        return _diverge(state, wrong[0], wrong[1], state.assistant_seq, e.seq)
    # Stub results close the batch; the next request carries them in call order.
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))


# --- children and the end ------------------------------------------------


def _spawn(state: LoopState, e: Spawn) -> Outcome:
    broken = spawn_violation(
        e.parent_mode, e.parent_tools, e.child_mode, e.child_tools, e.requested_mode
    )
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
        "hook": _hook,
        "decision": _decision,
        "ask_resolved": _ask_resolved,
        "effect_start": _effect_start,
        "commit": _commit,
        "effect_end": _effect_end,
        "handshake": _handshake,
        "job_done": _job_done,
        "result": _result,
        "results_sent": _results_sent,
        "cancel": _cancel,
        "interrupt": _interrupt,
        **dict.fromkeys(SOURCE_KINDS, _source),
        "resume": _resume,
        "repair": _repair,
        "spawn": _spawn,
        "run_end": _run_end,
    }
)


# --- what an event puts to the test (coverage) ------------------------------


def exclusive_pair(calls: Sequence[Call]) -> bool:
    """SCHED-1/SCHED-3 have something to check: the batch holds an Exclusive
    call and another admitted foreground call."""
    foreground = [c for c in calls if c.admitted and c.cls in _FOREGROUND]
    return len(foreground) > 1 and any(c.cls is CallClass.EXCLUSIVE for c in foreground)


def shares_key(calls: Sequence[Call], call: Call) -> bool:
    return call.cls is CallClass.QUEUE and any(
        o is not call and o.cls is CallClass.QUEUE and o.key == call.key for o in calls
    )


def exercised(state: LoopState, e: TraceEvent) -> list[str]:
    """The invariant checks that event `e`, taken in `state`, actually put to
    the test: a check counts only where the situation it is about is present
    (a deny rule for PERM-2, a shared key for SCHED-2, a stub for RETRY-3...).
    Every event is checked for TRACE-1 and LOOP-1. Specified in
    specs/trace-format.md ("Coverage"); the fast replay counts the same."""
    out = ["TRACE-1", "LOOP-1"]
    f: Any = e
    index = state.index_of.get(getattr(e, "occ", ""), -1) if e.kind != "job_done" else -1
    call = state.calls[index] if index >= 0 else None
    kind = e.kind
    if kind == "compaction":
        out += ["CLOSE-6", "CLOSE-8"]
    elif kind == "hook":
        out.append("CHILD-6")
    elif kind == "decision":
        facts = f.facts
        out.append("PERM-1")
        if any(r.behavior is RuleBehavior.DENY for r in facts.rules):
            out.append("PERM-2")
        if facts.protected or facts.secret:
            out.append("PERM-3")
        if facts.mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
            out.append("PERM-4")
        if facts.mode is Mode.DONT_ASK:
            out.append("PERM-5")
        if f.decision is Decision.ASK and f.route in _WAITLESS:
            out.append("PERM-6")
        if call is not None and hooks_for(state.hooks, call.tool):
            out.append("CHILD-6")
        if call is not None and derived_exercised(state.recorded, call.tool, call.input, f):
            out.append("AUTH-4")
        if queue_edit(f):
            out.append("SCHED-2")
    elif kind == "effect_start" and call is not None:
        out.append("AUTH-1")
        if state.tools is not None:
            out.append("AUTH-3")
        if not state.effects_started and len(state.calls) > 1:
            out.append("AUTH-2")
        if call.started:
            out.append("RETRY-1")
        if exclusive_pair(state.calls):
            out += ["SCHED-1", "SCHED-3"]
        if shares_key(state.calls, call):
            out.append("SCHED-2")
        if any(o is not call and footprints_conflict(call, o) for o in state.calls):
            out.append("SCHED-6")
    elif kind == "commit" and f.recovered:
        out.append("RETRY-4")
    elif kind == "effect_end" and call is not None:
        if f.committed or call.committed:
            out.append("RETRY-2")
        if call.covered or f.outcome is EffectOutcome.CANCELLED:
            out.append("SCHED-5")
    elif kind in ("handshake", "job_done"):
        out.append("SCHED-4")
    elif kind == "result":
        out += ["CLOSE-1", "CLOSE-4"]
        failed = any(
            o is not call and (o.status is ResultStatus.ERROR or o.outcome is EffectOutcome.ERROR)
            for o in state.calls
        )
        ended_cancelled = call is not None and call.outcome is EffectOutcome.CANCELLED
        if f.status in _NEEDS_CANCEL or failed or ended_cancelled:
            out.append("SCHED-5")
        if state.phase is Phase.RESUMED or (call is not None and call.committed):
            out.append("RETRY-2")
    elif kind == "results_sent":
        out += ["CLOSE-2", "CLOSE-3", "CLOSE-4"]
    elif kind == "cancel":
        out.append("SCHED-5")
    elif kind == "resume":
        out += ["RETRY-1" for c in state.calls if c.committed and not c.closed]
    elif kind == "repair":
        out.append("CLOSE-5")
        out += ["RETRY-3"] * len(f.stubbed)
        if f.recovered or any(c.recovered for c in state.calls):
            out.append("RETRY-4")
        if state.calls:
            out += ["CLOSE-3", "CLOSE-4"]
    elif kind == "spawn":
        out += ["CHILD-1", "CHILD-2"]
        if Mode.PLAN in (f.parent_mode, f.child_mode):
            out.append("CHILD-3")
    elif kind == "run_end":
        out.append("CLOSE-2")
        if f.status is RunStatus.COMPLETED:
            out += ["LOOP-2", "SCHED-4"]
    return out


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
        and (state.tools is None or c.tool in state.tools)
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


def _ancestors(path: str) -> list[str]:
    """`/a/b/c` -> `/`, `/a`, `/a/b`."""
    parts = path.rstrip("/").split("/")
    return ["/"] + ["/".join(parts[:i]) for i in range(2, len(parts))]


def _touches(paths: Sequence[str], exact: set[str], above: set[str]) -> bool:
    """Whether a footprint overlaps one whose paths are `exact` (and whose
    ancestors are `above`): some path is one of them, lies below one, or
    lies above one."""
    for p in paths:
        if p == "/" and (exact or above):
            return True
        if p in exact or p in above or any(a in exact for a in _ancestors(p)):
            return True
    return False


def footprint_partners(calls: Sequence[CallLike]) -> set[int]:
    """The indices of the calls that conflict with some other call of the
    batch by `footprints_conflict`, in time linear in the paths (not in pairs)."""

    def index(footprints: list[tuple[str, ...]]) -> tuple[set[str], set[str]]:
        exact = {p for fp in footprints for p in fp}
        above = {a for p in exact for a in _ancestors(p) if p != "/"}
        return exact, above

    safe = [c for c in calls if c.cls is CallClass.SAFE and c.reads]
    writers = [c for c in calls if c.cls in _WRITERS and c.writes]
    if not safe or not writers:
        return set()
    w_exact, w_above = index([c.writes for c in writers])
    r_exact, r_above = index([c.reads for c in safe])
    out = {c.index for c in safe if _touches(c.reads, w_exact, w_above)}
    out |= {c.index for c in writers if _touches(c.writes, r_exact, r_above)}
    return out
