"""Valid runs of the model, and traces broken on purpose, for tests and demos.

`simulate` plays an abstract runtime that follows the specs: staged decisions,
batch preflight, the four-class schedule over simulated time, closure, cancel,
interrupt and repair, background jobs and spawns. `break_trace` edits a valid
trace so that exactly one named invariant fails first. Both take a seeded
`random.Random`; nothing here touches global randomness, a clock or I/O.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ._children import ChildAuthority, child_authority
from ._permissions import resolve, settle_ask
from .trace import (
    AskResolved,
    Assistant,
    CallClass,
    CallRef,
    Cancel,
    Compaction,
    Decision,
    DecisionEvent,
    EffectEnd,
    EffectOutcome,
    EffectStart,
    Facts,
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
    RuleRef,
    RunEnd,
    RunStatus,
    Source,
    Spawn,
    ToolKind,
    TraceEvent,
    TraceHeader,
    TurnStart,
)

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
    queue_keys: int = 2


@attrs.frozen
class _Planned:
    """One call of a batch as the simulated runtime sees it."""

    ref: CallRef
    facts: Facts
    cls: CallClass
    key: str | None


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


def _classify(rng: random.Random, cfg: SimConfig, kind: ToolKind) -> tuple[CallClass, str | None]:
    if kind is ToolKind.EDIT:
        return CallClass.QUEUE, f"file:/ws/f{rng.randrange(cfg.queue_keys)}.txt"
    if kind is ToolKind.EXEC:
        if rng.random() < cfg.p_background:
            return CallClass.BACKGROUND, None
        return (CallClass.SAFE if rng.random() < 0.3 else CallClass.EXCLUSIVE), None
    return CallClass.SAFE, None


def _plan_batch(rng: random.Random, cfg: SimConfig, mode: Mode, turn: int) -> list[_Planned]:
    planned = []
    ids = [f"toolu_{turn}_{i}" for i in range(rng.randint(1, cfg.max_batch))]
    if len(ids) > 1 and rng.random() < 0.2:
        ids[-1] = ids[0]  # providers repeat ids; occurrences stay distinct
    for index, call_id in enumerate(ids):
        kind = rng.choice(list(ToolKind))
        cls, key = _classify(rng, cfg, kind)
        ref = CallRef(
            occ=f"{turn}.{index}",
            call_id=call_id,
            tool=rng.choice(TOOLS_BY_KIND[kind]),
            input={"n": index},
        )
        planned.append(_Planned(ref, _facts(rng, cfg, mode, kind), cls, key))
    return planned


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
    Background returns its handshake at once."""
    timed: list[_Timed] = []
    segment_start = t0
    segment_end = t0
    key_free: dict[str | None, float] = {}
    for planned in admitted:
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
            start = max(segment_start, key_free.get(planned.key, segment_start))
            end = start + duration
            key_free[planned.key] = end + 0.0001
        elif planned.cls is CallClass.BACKGROUND:
            start, end, outcome = segment_start, segment_start + 0.0005, EffectOutcome.OK
        else:
            start = segment_start
            end = start + duration
        segment_end = max(segment_end, end)
        timed.append(_Timed(planned, start, end, outcome))
    return timed


def simulate(seed: int, config: SimConfig | None = None) -> tuple[TraceHeader, list[TraceEvent]]:
    """One valid run of the model. Deterministic in `seed`."""
    cfg = config or SimConfig()
    rng = random.Random(seed)
    mode = cfg.mode or rng.choice(list(Mode))
    route = cfg.route or rng.choice(list(Route))
    header = TraceHeader(
        run_id=f"sim-{seed}",
        root_run_id=f"sim-{seed}",
        mode=mode,
        route=route,
        headless_default=cfg.headless_default,
        tools=ALL_TOOLS,
        producer="metis_model.simulate",
    )
    rec = _Recorder()
    closed_history: list[str] = []
    pending_jobs: list[tuple[str, str, int]] = []
    for turn in range(1, cfg.turns + 1):
        last = turn == cfg.turns
        rec.t += 0.001
        start = rec.add(TurnStart, turn=turn)
        if closed_history and rng.random() < cfg.p_compaction:
            removed = tuple(closed_history[: rng.randint(1, len(closed_history))])
            del closed_history[: len(removed)]
            rec.add(Compaction, start, turn=turn, calls_removed=removed, results_removed=removed)
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
        closed = _run_batch(rng, cfg, rec, batch, assistant, route, pending_jobs, mode, turn)
        closed_history.extend(closed)
        if rec.events[-1].kind == "repair":
            continue
    for occ, job, handshake in pending_jobs:
        rec.t += 0.001
        rec.add(JobDone, handshake, occ=occ, job=job, outcome=EffectOutcome.OK)
    rec.t += 0.001
    rec.add(RunEnd, len(rec.events) - 1, status=RunStatus.COMPLETED)
    return header, rec.events


def _run_batch(
    rng: random.Random,
    cfg: SimConfig,
    rec: _Recorder,
    batch: Sequence[_Planned],
    assistant: int,
    route: Route,
    pending_jobs: list[tuple[str, str, int]],
    mode: Mode,
    turn: int,
) -> list[str]:
    last_of: dict[str, int] = {}
    admitted: list[_Planned] = []
    results: dict[str, tuple[ResultStatus, int]] = {}
    # Batch preflight: every call decided, every ask settled, before any effect.
    for planned in batch:
        occ = planned.ref.occ
        res = resolve(planned.facts)
        last_of[occ] = rec.add(
            DecisionEvent,
            assistant,
            occ=occ,
            decision=res.decision,
            stage=res.stage.value,
            rule=res.rule,
            facts=planned.facts,
            route=route,
            cls=planned.cls,
            key=planned.key,
        )
        ok = res.decision is Decision.ALLOW
        if res.decision is Decision.ASK:
            settled = settle_ask(route, cfg.headless_default, rng.random() < 0.7)
            last_of[occ] = rec.add(
                AskResolved,
                last_of[occ],
                occ=occ,
                approved=settled.approved,
                resolver=settled.resolver,
            )
            ok = settled.approved
        if ok:
            admitted.append(planned)
        else:
            results[occ] = (
                ResultStatus.DENIED,
                rec.add(
                    Result,
                    last_of[occ],
                    occ=occ,
                    call_id=planned.ref.call_id,
                    status=ResultStatus.DENIED,
                ),
            )
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
            last_of[occ] = rec.add(EffectStart, last_of[occ], occ=occ)
            started.add(occ)
            running[occ] = x
            continue
        del running[occ]
        if x.call.cls is CallClass.BACKGROUND:
            job = f"job-{occ}"
            last_of[occ] = rec.add(Handshake, last_of[occ], occ=occ, job=job)
            pending_jobs.append((occ, job, last_of[occ]))
            status = ResultStatus.OK
        else:
            committed = x.outcome is EffectOutcome.OK and x.call.facts.kind in (
                ToolKind.EDIT,
                ToolKind.EXEC,
            )
            last_of[occ] = rec.add(
                EffectEnd, last_of[occ], occ=occ, outcome=x.outcome, committed=committed
            )
            status = ResultStatus.OK if x.outcome is EffectOutcome.OK else ResultStatus.ERROR
        results[occ] = (
            status,
            rec.add(Result, last_of[occ], occ=occ, call_id=x.call.ref.call_id, status=status),
        )
        if x.call.ref.tool == "bash" and status is ResultStatus.OK and rng.random() < cfg.p_spawn:
            _spawn(rng, rec, mode, last_of[occ], turn)
    if stop is not None and cut is not None:
        rec.t = max(rec.t, cut)
        if stop == "interrupt":
            rec.add(Interrupt, reason="user interrupt")
            for occ in list(running):
                rec.add(EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED)
            rec.add(Resume)
            open_occs = tuple(p.ref.occ for p in batch if p.ref.occ not in results)
            rec.add(Repair, assistant, stubbed=open_occs)
            return []
        rec.add(Cancel, turn=turn, reason="user cancel")
        for occ, x in list(running.items()):
            last_of[occ] = rec.add(
                EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED
            )
            results[occ] = (
                ResultStatus.CANCELLED,
                rec.add(
                    Result,
                    last_of[occ],
                    occ=occ,
                    call_id=x.call.ref.call_id,
                    status=ResultStatus.CANCELLED,
                ),
            )
        for planned in admitted:
            occ = planned.ref.occ
            if occ not in started:
                results[occ] = (
                    ResultStatus.SKIPPED,
                    rec.add(
                        Result,
                        last_of[occ],
                        occ=occ,
                        call_id=planned.ref.call_id,
                        status=ResultStatus.SKIPPED,
                    ),
                )
    occs = tuple(p.ref.occ for p in batch)
    rec.t += 0.0005
    rec.add(ResultsSent, *(results[o][1] for o in occs), turn=turn, occs=occs)
    return list(occs)


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
        )


def flat_run(turns: int, mode: Mode = Mode.DEFAULT) -> tuple[TraceHeader, list[TraceEvent]]:
    """A long, flat valid run: every turn makes one allowed read and answers.

    Eight events a turn, each caused by the one before, no randomness: the
    shape used to measure replay throughput (benchmarks/bench_check.py).
    """
    header = TraceHeader(run_id="flat", root_run_id="flat", mode=mode, producer="flat_run")
    facts = Facts(mode=mode, kind=ToolKind.READ_ONLY)
    res = resolve(facts)
    events: list[TraceEvent] = []
    seq = 0
    for turn in range(1, turns + 1):
        occ = f"{turn}.0"
        ref = CallRef(occ=occ, call_id=f"toolu_{turn}", tool="read", input={"path": "a.txt"})
        for factory, fields in (
            (TurnStart, {"turn": turn}),
            (Request, {"turn": turn}),
            (Assistant, {"turn": turn, "calls": (ref,), "stop_reason": "tool_use"}),
            (
                DecisionEvent,
                {
                    "occ": occ,
                    "decision": res.decision,
                    "stage": res.stage.value,
                    "facts": facts,
                    "cls": CallClass.SAFE,
                },
            ),
            (EffectStart, {"occ": occ}),
            (EffectEnd, {"occ": occ, "outcome": EffectOutcome.OK}),
            (Result, {"occ": occ, "call_id": ref.call_id, "status": ResultStatus.OK}),
            (ResultsSent, {"turn": turn, "occs": (occ,)}),
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
