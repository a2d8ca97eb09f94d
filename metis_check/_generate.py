"""Valid runs of the model, and traces broken on purpose, for tests and demos.

`simulate` plays an abstract runtime that follows the specs: staged decisions,
batch preflight, the four-class schedule over simulated time, closure, cancel,
interrupt and repair, background jobs and spawns. `break_trace` edits a valid
trace so that exactly one named invariant fails first. Both take a seeded
`random.Random`; nothing here touches global randomness, a clock or I/O.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import attrs

from metis_model._children import ChildAuthority
from metis_model._children import child_authority
from metis_model._permissions import resolve
from metis_model._permissions import settle_ask
from metis_trace import NOT_JOURNALED
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import Commit
from metis_trace import Compaction
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Facts
from metis_trace import Handshake
from metis_trace import HookRef
from metis_trace import HookRun
from metis_trace import Interrupt
from metis_trace import JobDone
from metis_trace import MessageShape
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import Resume
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import SignalReceived
from metis_trace import SinkError
from metis_trace import Source
from metis_trace import Spawn
from metis_trace import StopRequest
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart
from metis_trace import content_digest

TOOLS_BY_KIND: dict[ToolKind, tuple[str, ...]] = {
    ToolKind.READ_ONLY: ("read", "grep", "ls"),
    ToolKind.EDIT: ("edit", "write"),
    ToolKind.EXEC: ("bash",),
    ToolKind.PLAN_CONTROL: ("exit_plan_mode",),
}
ALL_TOOLS: tuple[str, ...] = (
    "read",
    "grep",
    "ls",
    "edit",
    "write",
    "bash",
    "exit_plan_mode",
    "spawn_agent",
)


@attrs.frozen
class SimConfig:
    turns: int = 4
    max_batch: int = 5
    mode: Mode | None = None  # None: choose at random
    route: Route | None = None
    headless_default: Decision = Decision.DENY
    p_rules: float = 0.4
    p_protected: float = 0.1
    p_out_of_scope: float = 0.1
    p_error: float = 0.15
    p_cancel: float = 0.1
    p_interrupt: float = 0.1
    p_background: float = 0.2
    p_spawn: float = 0.15
    p_compaction: float = 0.2
    p_hooks: float = 0.3  # a run has PreToolUse hooks in force
    p_veto: float = 0.2  # a hook vetoes a call it covers
    p_timeout: float = 0.1  # a running call is cancelled by its time limit
    queue_keys: int = 2


# The simulated workspace: edits write one of its files, reads read one of
# them or the whole of it (a grep over the workspace), which SCHED-6 orders.
WORKSPACE = "/ws"
# What a committed call's result carries (its commit's digest is of it, RETRY-2):
# the output (empty here), or after a resume the journal's copy of it.
_OUTPUT_DIGEST = content_digest("")
_JOURNALED = "[from the journal]"
HOOKS: tuple[HookRef, ...] = (HookRef(id="guard-shell", matcher="bash"), HookRef(id="audit"))


@attrs.frozen
class _Planned:
    """One call of a batch as the simulated runtime sees it."""

    ref: CallRef
    facts: Facts
    cls: CallClass
    key: str | None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


class _Recorder:
    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self.t = 0.0

    def add(self, factory: Callable[..., TraceEvent], *causes: int, **fields: Any) -> int:
        seq = len(self.events)
        valid = tuple(sorted({c for c in causes if 0 <= c < seq}))
        self.events.append(factory(seq=seq, t=round(self.t, 6), causes=valid, **fields))
        return seq


def _facts(rng: random.Random, cfg: SimConfig, mode: Mode, kind: ToolKind) -> Facts:
    rules: list[RuleRef] = []
    if rng.random() < cfg.p_rules:
        for _ in range(rng.randint(1, 2)):
            rules.append(
                RuleRef(
                    behavior=rng.choice(list(RuleBehavior)),
                    source=rng.choice(list(Source)),
                    pattern=f"Rule{rng.randint(0, 9)}",
                    recency=rng.randint(0, 5),
                )
            )
    return Facts(
        mode=mode,
        kind=kind,
        protected=rng.random() < cfg.p_protected,
        secret=kind is ToolKind.READ_ONLY and rng.random() < cfg.p_protected,
        in_scope=rng.random() >= cfg.p_out_of_scope,
        rules=tuple(rules),
    )


def _classify(
    rng: random.Random, cfg: SimConfig, kind: ToolKind
) -> tuple[CallClass, str | None, tuple[str, ...], tuple[str, ...]]:
    """Class, key, read and write footprints (unknown = the whole filesystem)."""
    if kind is ToolKind.EDIT:
        path = f"{WORKSPACE}/f{rng.randrange(cfg.queue_keys)}.txt"
        return CallClass.QUEUE, f"file:{path}", (), (path,)
    if kind is ToolKind.EXEC:
        if rng.random() < cfg.p_background:
            return CallClass.BACKGROUND, None, (), ("/",)
        if rng.random() < 0.3:
            return CallClass.SAFE, None, ("/",), ()
        return CallClass.EXCLUSIVE, None, (), ("/",)
    if kind is ToolKind.READ_ONLY:
        choices = (WORKSPACE, f"{WORKSPACE}/f0.txt", f"{WORKSPACE}/f1.txt", f"{WORKSPACE}/notes")
        return CallClass.SAFE, None, (rng.choice(choices),), ()
    return CallClass.SAFE, None, (), ()


def _plan_batch(rng: random.Random, cfg: SimConfig, mode: Mode, turn: int) -> list[_Planned]:
    planned = []
    ids = [f"toolu_{turn}_{i}" for i in range(rng.randint(1, cfg.max_batch))]
    if len(ids) > 1 and rng.random() < 0.2:
        ids[-1] = ids[0]  # providers repeat ids; occurrences stay distinct
    for index, call_id in enumerate(ids):
        kind = rng.choice(list(ToolKind))
        cls, key, reads, writes = _classify(rng, cfg, kind)
        tool = rng.choice(TOOLS_BY_KIND[kind])
        facts = _facts(rng, cfg, mode, kind)
        input: dict[str, Any] = {"n": index}
        if tool == "read" and (facts.secret or not facts.in_scope):
            # A read the header's settings decide (AUTH-4): the deriver is
            # sure of the fact the simulated gate recorded.
            path = f"{WORKSPACE}/.env" if facts.secret else "/elsewhere/f.txt"
            input, reads = {"path": path}, (path,)
        ref = CallRef(occ=f"{turn}.{index}", call_id=call_id, tool=tool, input=input)
        planned.append(_Planned(ref, facts, cls, key, reads, writes))
    return planned


def _overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    return any(
        x == y or x == "/" or y == "/" or x.startswith(y + "/") or y.startswith(x + "/")
        for x in a
        for y in b
    )


def _conflict(a: _Planned, b: _Planned) -> bool:
    """SCHED-6: a Safe call reads where a Queue or Exclusive one writes."""
    writers = (CallClass.QUEUE, CallClass.EXCLUSIVE)
    if a.cls is CallClass.SAFE and b.cls in writers:
        return _overlap(a.reads, b.writes)
    return b.cls is CallClass.SAFE and a.cls in writers and _overlap(b.reads, a.writes)


@attrs.frozen
class _Timed:
    """A scheduled effect: start and end times of its foreground part."""

    call: _Planned
    start: float
    end: float
    outcome: EffectOutcome


def _schedule(
    rng: random.Random, cfg: SimConfig, admitted: Sequence[_Planned], t0: float
) -> list[_Timed]:
    """Four-class schedule: Safe overlap, Queue FIFO per key, Exclusive barrier,
    Background returns its handshake at once; a Safe call and a writer whose
    footprints conflict run in call order (SCHED-6)."""
    timed: list[_Timed] = []
    segment_start = t0
    segment_end = t0
    key_free: dict[str | None, float] = {}
    for planned in admitted:
        after = [x.end + 0.0001 for x in timed if _conflict(planned, x.call)]
        floor = max([segment_start, *after])
        duration = round(rng.uniform(0.001, 0.02), 6)
        outcome = EffectOutcome.ERROR if rng.random() < cfg.p_error else EffectOutcome.OK
        if planned.cls is CallClass.EXCLUSIVE:
            start = max(segment_end, segment_start)
            end = start + duration
            timed.append(_Timed(planned, start, end, outcome))
            segment_start = segment_end = end + 0.0001
            key_free.clear()
            continue
        if planned.cls is CallClass.QUEUE:
            start = max(floor, key_free.get(planned.key, segment_start))
            end = start + duration
            key_free[planned.key] = end + 0.0001
        elif planned.cls is CallClass.BACKGROUND:
            start, end, outcome = segment_start, segment_start + 0.0005, EffectOutcome.OK
        else:
            start = floor
            end = start + duration
        segment_end = max(segment_end, end)
        timed.append(_Timed(planned, start, end, outcome))
    return timed


# The gate settings a simulated header records (`meta.permissions`, AUTH-4).
# Simulated inputs name no path and no command, so the deriver is sure of
# nothing in a valid run; the AUTH-4 mutator gives a call an input these
# settings decide.
SIM_PERMISSIONS: dict[str, Any] = {
    "workspace": "/ws",
    "home": "/home/sim",
    "roots": ["/ws"],
    "protected": [],
    "auto": False,
    "rules": [
        {"behavior": "deny", "source": "project", "pattern": "Bash(rm:*)", "recency": 1},
        {"behavior": "ask", "source": "cli", "pattern": "Read(secrets/**)", "recency": 2},
    ],
}


def simulate(seed: int, config: SimConfig | None = None) -> tuple[TraceHeader, list[TraceEvent]]:
    """One valid run of the model. Deterministic in `seed`."""
    cfg = config or SimConfig()
    rng = random.Random(seed)
    mode = cfg.mode or rng.choice(list(Mode))
    route = cfg.route or rng.choice(list(Route))
    hooks = HOOKS if rng.random() < cfg.p_hooks else ()
    header = TraceHeader(
        run_id=f"sim-{seed}",
        root_run_id=f"sim-{seed}",
        mode=mode,
        route=route,
        headless_default=cfg.headless_default,
        tools=ALL_TOOLS,
        hooks=hooks,
        producer="metis_model.simulate",
        meta={"permissions": SIM_PERMISSIONS},
    )
    rec = _Recorder()
    sim = _Run(rng, cfg, rec, route, mode, hooks)
    for turn in range(1, cfg.turns + 1):
        last = turn == cfg.turns
        rec.t += 0.001
        start = rec.add(TurnStart, turn=turn)
        if sim.closed_history and rng.random() < cfg.p_compaction:
            sim.compact(start, turn)
        req = rec.add(Request, start, turn=turn)
        rec.t += 0.002
        if last:
            rec.add(Assistant, req, turn=turn, message_id=f"msg_{turn}", stop_reason="end_turn")
            break
        batch = _plan_batch(rng, cfg, mode, turn)
        assistant = rec.add(
            Assistant,
            req,
            turn=turn,
            message_id=f"msg_{turn}",
            calls=tuple(p.ref for p in batch),
            stop_reason="tool_use",
        )
        sim.run_batch(batch, assistant, turn)
    for number, (occ, job, handshake) in enumerate(sim.pending_jobs):
        rec.t += 0.001
        # Every third job still running at the end is left running on purpose
        # (`metis run --detach-jobs`): detached, with its process group (SCHED-4).
        if number % 3 == 2:
            pid = 4000 + handshake
            rec.add(JobDone, handshake, occ=occ, job=job, outcome=EffectOutcome.DETACHED, pid=pid)
        else:
            rec.add(JobDone, handshake, occ=occ, job=job, outcome=EffectOutcome.OK)
    rec.t += 0.001
    rec.add(RunEnd, len(rec.events) - 1, status=RunStatus.COMPLETED)
    return header, rec.events


def _stub_unknown(planned: _Planned, started: bool) -> bool:
    """RETRY-3: a started call that is not Safe may have changed the world."""
    return started and planned.cls is not CallClass.SAFE


class _Run:
    """One simulated run: the transcript so far, outstanding jobs, and how a
    batch is played out."""

    def __init__(
        self,
        rng: random.Random,
        cfg: SimConfig,
        rec: _Recorder,
        route: Route,
        mode: Mode,
        hooks: tuple[HookRef, ...],
    ) -> None:
        self.rng = rng
        self.cfg = cfg
        self.rec = rec
        self.route = route
        self.mode = mode
        self.hooks = hooks
        self.closed_history: list[str] = []  # occurrences compaction may remove
        # The transcript as (occs, call ids) per closed batch, after the task.
        self.batches: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.pending_jobs: list[tuple[str, str, int]] = []

    def compact(self, start: int, turn: int) -> None:
        rng, rec = self.rng, self.rec
        removed = tuple(self.closed_history[: rng.randint(1, len(self.closed_history))])
        del self.closed_history[: len(removed)]
        gone = set(removed)
        self.batches = [b for b in self.batches if not set(b[0]) <= gone]
        rec.add(
            Compaction,
            start,
            turn=turn,
            calls_removed=removed,
            results_removed=removed,
            messages=self.shapes(),
        )

    def shapes(self) -> tuple[MessageShape, ...]:
        """The transcript left: the (folded) task, then each batch's call and results."""
        out = [MessageShape(role="user", blocks=("text",))]
        for _, ids in self.batches:
            out.append(MessageShape(role="assistant", blocks=("text", *(f"call:{i}" for i in ids))))
            out.append(MessageShape(role="user", blocks=tuple(f"result:{i}" for i in ids)))
        return tuple(out)

    def _hooks(self, planned: _Planned, cause: int) -> tuple[int, str | None]:
        """Run the hooks that cover the call, in order, until one vetoes (its id)."""
        last = cause
        for hook in self.hooks:
            if not fnmatch.fnmatchcase(planned.ref.tool, hook.matcher):
                continue
            vetoed = self.rng.random() < self.cfg.p_veto
            last = self.rec.add(
                HookRun,
                last,
                occ=planned.ref.occ,
                hook=hook.id,
                vetoed=vetoed,
                reason="blocked by policy" if vetoed else "",
            )
            if vetoed:
                return last, hook.id
        return last, None

    def _decide(self, planned: _Planned, assistant: int) -> tuple[int, bool]:
        """Hooks, decision and ask: the last event's seq, and whether it is admitted."""
        rec, occ, facts = self.rec, planned.ref.occ, planned.facts
        first = resolve(facts)
        last, vetoed = assistant, None
        if first.decision is not Decision.DENY:
            last, vetoed = self._hooks(planned, assistant)
        if vetoed is not None:
            hook_rule = RuleRef(
                behavior=RuleBehavior.DENY, source=Source.POLICY, pattern=f"hook:{vetoed}"
            )
            facts = facts.model_copy(update={"rules": (*facts.rules, hook_rule)})
        res = resolve(facts)
        last = rec.add(
            DecisionEvent,
            last,
            occ=occ,
            decision=res.decision,
            stage=res.stage.value,
            rule=res.rule,
            facts=facts,
            route=self.route,
            cls=planned.cls,
            key=planned.key,
            reads=planned.reads,
            writes=planned.writes,
        )
        ok = res.decision is Decision.ALLOW
        if res.decision is Decision.ASK:
            answer = settle_ask(self.route, self.cfg.headless_default, self.rng.random() < 0.7)
            last = rec.add(
                AskResolved, last, occ=occ, approved=answer.approved, resolver=answer.resolver
            )
            ok = answer.approved
        return last, ok

    def run_batch(self, batch: Sequence[_Planned], assistant: int, turn: int) -> None:
        rng, cfg, rec = self.rng, self.cfg, self.rec
        last_of: dict[str, int] = {}
        admitted: list[_Planned] = []
        results: dict[str, tuple[ResultStatus, int]] = {}

        def answer(ref: CallRef, status: ResultStatus, **content: Any) -> None:
            """The call's result, after its last event (kept for results_sent)."""
            result = rec.add(
                Result, last_of[ref.occ], occ=ref.occ, call_id=ref.call_id, status=status, **content
            )
            results[ref.occ] = (status, result)

        # Batch preflight: every call decided, every ask settled, before any effect.
        for planned in batch:
            occ = planned.ref.occ
            last_of[occ], ok = self._decide(planned, assistant)
            if ok:
                admitted.append(planned)
            else:
                answer(planned.ref, ResultStatus.DENIED)
        t0 = rec.t + 0.001
        timed = _schedule(rng, cfg, admitted, t0)
        horizon = max((x.end for x in timed), default=t0)
        cut: float | None = None
        stop: str | None = None
        if timed and rng.random() < cfg.p_cancel + cfg.p_interrupt:
            cut = rng.uniform(t0, horizon)
            stop = (
                "cancel"
                if rng.random() < cfg.p_cancel / (cfg.p_cancel + cfg.p_interrupt)
                else "interrupt"
            )
        # A foreground call that is cut by its time limit, half-way through.
        timeouts = [x for x in timed if x.call.cls is not CallClass.BACKGROUND]
        timed_out = (
            rng.choice(timeouts).call.ref.occ if timeouts and rng.random() < cfg.p_timeout else None
        )
        points: list[tuple[float, int, int, _Timed]] = []
        for i, x in enumerate(timed):
            points.append((x.start, 1, i, x))
            points.append((x.end, 0, i, x))
        points.sort(key=lambda p: (p[0], p[1], p[2]))
        running: dict[str, _Timed] = {}
        started: set[str] = set()
        for when, is_start, _, x in points:
            if cut is not None and when > cut:
                break
            occ = x.call.ref.occ
            rec.t = max(rec.t, when)
            if is_start:
                # The timed-out call records its limit as it starts (SCHED-5).
                limits = {"limit_s": _limit(x)} if occ == timed_out else {}
                last_of[occ] = rec.add(EffectStart, last_of[occ], occ=occ, **limits)
                started.add(occ)
                running[occ] = x
                continue
            del running[occ]
            if occ == timed_out:
                limit = _limit(x)
                rec.t = max(rec.t, x.start + limit)
                rec.add(
                    Cancel,
                    last_of[occ],
                    turn=turn,
                    cause=CancelCause.TIMEOUT,
                    occs=(occ,),
                    limit_s=limit,
                    reason=f"ran past its {limit:g} s limit",
                )
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED
                )
                status = ResultStatus.CANCELLED
            elif x.call.cls is CallClass.BACKGROUND:
                job = f"job-{occ}"
                last_of[occ] = rec.add(Handshake, last_of[occ], occ=occ, job=job)
                self.pending_jobs.append((occ, job, last_of[occ]))
                status = ResultStatus.OK
            else:
                committed = x.outcome is EffectOutcome.OK and x.call.facts.kind in (
                    ToolKind.EDIT,
                    ToolKind.EXEC,
                )
                if committed:  # its digest: of the output its result carries (RETRY-2)
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=x.outcome, digest=_OUTPUT_DIGEST
                    )
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=x.outcome, committed=committed
                )
                status = ResultStatus.OK if x.outcome is EffectOutcome.OK else ResultStatus.ERROR
            answer(x.call.ref, status)
            if (
                x.call.ref.tool == "bash"
                and status is ResultStatus.OK
                and rng.random() < cfg.p_spawn
            ):
                _spawn(rng, rec, self.mode, last_of[occ], turn)
        ids = tuple(p.ref.call_id for p in batch)
        occs = tuple(p.ref.occ for p in batch)
        if stop is not None and cut is not None:
            rec.t = max(rec.t, cut)
            if stop == "interrupt":
                killed = rng.random() < 0.5  # the process died, or the user stopped it
                # A running edit or exec that completed commits, before the stop
                # or (the user's stop lets it finish) after it; its result is
                # then the resumed process's to report (RETRY-1, RETRY-2).
                mutating = (ToolKind.EDIT, ToolKind.EXEC)
                commits = [
                    occ
                    for occ, x in running.items()
                    if x.call.facts.kind in mutating and x.call.cls is not CallClass.BACKGROUND
                    if rng.random() < 0.4
                ]
                late = {occ for occ in commits if not killed and rng.random() < 0.5}
                journal = content_digest(_JOURNALED)
                # A killed process's exec that finished before it could commit:
                # the resuming process commits it from its exit record (RETRY-4;
                # edits leave none). Chosen without drawing: other runs stay as they were.
                recovered = tuple(
                    occ
                    for occ in occs
                    if killed and occ in commits and running[occ].call.facts.kind is ToolKind.EXEC
                )
                for occ in commits:
                    if occ not in late and occ not in recovered:
                        last_of[occ] = rec.add(
                            Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, digest=journal
                        )
                if killed:  # nothing records a SIGKILL: no effect ends cancelled
                    rec.add(Interrupt, reason="process killed")
                else:  # the user's Ctrl-C: the interrupt names the signal (SCHED-5)
                    sigint = rec.add(SignalReceived, signum=2, name="SIGINT")
                    rec.add(Interrupt, sigint, reason="user interrupt")
                for occ in sorted(late):
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, digest=journal
                    )
                for occ in recovered:  # no digest: its output is the exit record's
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, recovered=True
                    )
                for occ in list(running):
                    committed = occ in commits
                    outcome = (
                        EffectOutcome.OK
                        if committed
                        else EffectOutcome.UNKNOWN
                        if killed
                        else EffectOutcome.CANCELLED
                    )
                    last_of[occ] = rec.add(
                        EffectEnd, last_of[occ], occ=occ, outcome=outcome, committed=committed
                    )
                rec.add(Resume)
                for occ in commits:  # answered from the journal, never run again
                    answer(
                        running[occ].call.ref,
                        ResultStatus.OK,
                        # the journal's output; or, the kill having come
                        # between the commit and the journal, the note
                        # (chosen without drawing: other runs stay as they were)
                        content=NOT_JOURNALED if occ.endswith("2") else _JOURNALED,
                    )
                open_calls = [p for p in batch if p.ref.occ not in results]
                rec.add(
                    Repair,
                    assistant,
                    stubbed=tuple(p.ref.occ for p in open_calls),
                    unknown=tuple(
                        p.ref.occ for p in open_calls if _stub_unknown(p, p.ref.occ in started)
                    ),
                    call_ids=ids,
                    recovered=recovered,
                )
                self.batches.append((occs, ids))
                return
            # The cancel names its source (SCHED-5): the user's stop through the
            # API, or (every third turn, chosen without drawing) the journal's error.
            if turn % 3 == 0:
                source = rec.add(SinkError, sink="journal", error="simulated: disk full")
                cause = CancelCause.SINK_FAILURE
            else:
                source = rec.add(StopRequest, via="simulated", reason="user cancel")
                cause = CancelCause.USER
            rec.add(Cancel, source, turn=turn, cause=cause, reason=f"{cause.value} cancel")
            for occ, x in list(running.items()):
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED
                )
                answer(x.call.ref, ResultStatus.CANCELLED)
            for planned in admitted:
                occ = planned.ref.occ
                if occ not in started:
                    answer(planned.ref, ResultStatus.SKIPPED)
        rec.t += 0.0005
        rec.add(ResultsSent, *(results[o][1] for o in occs), turn=turn, occs=occs, call_ids=ids)
        self.closed_history.extend(occs)
        self.batches.append((occs, ids))


def _limit(x: _Timed) -> float:
    """The time limit of the call a timeout cuts, half-way through its effect."""
    return round(max(x.end - x.start, 0.001) / 2, 6)


def _spawn(rng: random.Random, rec: _Recorder, mode: Mode, cause: int, turn: int) -> None:
    requested = rng.choice([None, *Mode])
    granted = child_authority(mode, ALL_TOOLS, requested, profile_allow=rng.sample(ALL_TOOLS, 5))
    if isinstance(granted, ChildAuthority):
        rec.add(
            Spawn,
            cause,
            agent_id=f"child-{turn}-{rng.randrange(1000)}",
            child_mode=granted.mode,
            child_tools=tuple(sorted(granted.tools)),
            parent_mode=mode,
            parent_tools=ALL_TOOLS,
            requested_mode=requested,
        )


def verdict_fields(facts: Facts) -> dict[str, Any]:
    """A decision event's verdict fields for `facts`, as the model resolves them.

    The made-up runs (`flat_run`, `wide_batch`, `exit_case`) record the model's
    own decision, so they conform by construction; no rule is named.
    """
    res = resolve(facts)
    return {"decision": res.decision, "stage": res.stage.value, "facts": facts}


def flat_run(turns: int, mode: Mode = Mode.DEFAULT) -> tuple[TraceHeader, list[TraceEvent]]:
    """A long, flat valid run: every turn makes one allowed read and answers.

    Eight events a turn, each caused by the one before, no randomness: the
    shape used to measure replay throughput (benchmarks/bench_check.py).
    """
    header = TraceHeader(
        run_id="flat", root_run_id="flat", mode=mode, tools=("read",), producer="flat_run"
    )
    verdict = verdict_fields(Facts(mode=mode, kind=ToolKind.READ_ONLY))
    events: list[TraceEvent] = []
    seq = 0
    for turn in range(1, turns + 1):
        occ = f"{turn}.0"
        ref = CallRef(occ=occ, call_id=f"toolu_{turn}", tool="read", input={"path": "a.txt"})
        for factory, fields in (
            (TurnStart, {"turn": turn}),
            (Request, {"turn": turn}),
            (Assistant, {"turn": turn, "calls": (ref,), "stop_reason": "tool_use"}),
            (DecisionEvent, {"occ": occ, **verdict, "cls": CallClass.SAFE}),
            (EffectStart, {"occ": occ}),
            (EffectEnd, {"occ": occ, "outcome": EffectOutcome.OK}),
            (Result, {"occ": occ, "call_id": ref.call_id, "status": ResultStatus.OK}),
            (ResultsSent, {"turn": turn, "occs": (occ,), "call_ids": (ref.call_id,)}),
        ):
            events.append(
                factory(seq=seq, t=seq * 1e-6, causes=(seq - 1,) if seq else (), **fields)
            )
            seq += 1
    tail: list[tuple[Any, dict[str, Any]]] = [
        (TurnStart, {"turn": turns + 1}),
        (Request, {"turn": turns + 1}),
        (Assistant, {"turn": turns + 1, "calls": ()}),
        (RunEnd, {"status": RunStatus.COMPLETED}),
    ]
    for factory, fields in tail:
        events.append(factory(seq=seq, t=seq * 1e-6, causes=(seq - 1,), **fields))
        seq += 1
    return header, events
