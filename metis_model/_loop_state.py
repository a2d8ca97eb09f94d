"""The loop's state: its phases, the events each phase enables, and the call
occurrences of one batch (LOOP-1; specs/loop.md, "Phases" and "Call
occurrences").

`LoopState` is what `step` (`_loop.py`) threads through a trace, one frozen
value per event; a `Divergence` names the first invariant an event breaks.
`Call` is one occurrence's bookkeeping, `CallLike` what the scheduling and
closure checks read of it (a `Call` or the fast replay's record). The helpers
every handler uses are here too: `_lookup` finds an occurrence of the batch,
`_diverge` reports, `_with_call` records an event about a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any
from typing import Protocol

import attrs

from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route

from ._derive import Recorded


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


def _lookup(state: LoopState, occ: str, seq: int, inv: str = "LOOP-1") -> Call | Divergence:
    index = state.index_of.get(occ)
    if index is None:
        return _diverge(state, inv, f"{occ} is not a call of the current batch", seq)
    return state.calls[index]


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
