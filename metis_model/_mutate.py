"""Traces broken on purpose: one edit per invariant ID.

Each mutator takes a valid trace and returns a copy in which the named
invariant is the first to fail, or None when the trace lacks what the edit
needs (say, no Queue calls sharing a key). `broken_trace` searches simulated
runs for one that can be broken.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ._generate import SimConfig, simulate
from .trace import (
    AskResolved,
    CallClass,
    Compaction,
    Decision,
    DecisionEvent,
    EffectStart,
    Mode,
    Result,
    ResultStatus,
    Route,
    RuleBehavior,
    RuleRef,
    Source,
    Spawn,
    ToolKind,
    TraceEvent,
    TraceHeader,
)

Events = list[TraceEvent]
Mutator = Callable[[Events, random.Random], Events | None]


def _renumber(items: Sequence[tuple[int | None, TraceEvent]]) -> Events:
    """Give events consecutive seqs, keep causal edges to surviving events."""
    new_of = {old: i for i, (old, _) in enumerate(items) if old is not None}
    out: Events = []
    for i, (_, event) in enumerate(items):
        causes = tuple(sorted({new_of[c] for c in event.causes if c in new_of and new_of[c] < i}))
        out.append(event.model_copy(update={"seq": i, "causes": causes}))
    return out


def _tagged(events: Events) -> list[tuple[int | None, TraceEvent]]:
    return [(e.seq, e) for e in events]


def _insert_after(events: Events, pos: int, new: TraceEvent) -> Events:
    items = _tagged(events)
    items.insert(pos + 1, (None, new.model_copy(update={"t": events[pos].t, "causes": ()})))
    return _renumber(items)


def _move_after(events: Events, moved: Sequence[int], anchor: int) -> Events:
    """Move the events at `moved` to just after `anchor`, keeping their order."""
    keep = [x for x in _tagged(events) if x[0] not in set(moved)]
    block = [(s, events[s].model_copy(update={"t": events[anchor].t})) for s in moved]
    at = next(i for i, x in enumerate(keep) if x[0] == anchor)
    return _renumber(keep[: at + 1] + block + keep[at + 1 :])


def _replace(events: Events, index: int, **update: Any) -> Events:
    out = list(events)
    out[index] = events[index].model_copy(update=update)
    return out


def _batches(events: Events) -> list[list[int]]:
    """Seqs of each batch: from an assistant with calls up to its close."""
    spans: list[list[int]] = []
    current: list[int] | None = None
    for e in events:
        if e.kind == "assistant" and e.calls:
            current = [e.seq]
            spans.append(current)
        elif e.kind in ("results_sent", "repair", "turn_start"):
            if current is not None and e.kind != "turn_start":
                current.append(e.seq)
            current = None
        elif current is not None:
            current.append(e.seq)
    return spans


def _decisions(events: Events) -> dict[str, DecisionEvent]:
    return {e.occ: e for e in events if isinstance(e, DecisionEvent)}


def _first(events: Events, pred: Callable[[TraceEvent], bool]) -> TraceEvent | None:
    return next((e for e in events if pred(e)), None)


# --- one mutator per invariant --------------------------------------------


def _trace_1(ev: Events, rng: random.Random) -> Events | None:
    k = rng.randrange(1, len(ev))
    return _replace(ev, k, t=ev[k - 1].t - 1.0)


def _loop_1(ev: Events, rng: random.Random) -> Events | None:
    start = _first(ev, lambda e: e.kind == "turn_start")
    return None if start is None else _insert_after(ev, start.seq, start)


def _loop_2(ev: Events, rng: random.Random) -> Events | None:
    last_turn = max((e.seq for e in ev if e.kind == "turn_start"), default=None)
    if last_turn is None or last_turn == ev[0].seq:
        return None
    drop = {
        e.seq
        for e in ev[last_turn:]
        if e.kind in ("turn_start", "compaction", "request", "assistant")
    }
    return _renumber([x for x in _tagged(ev) if x[0] not in drop])


def _auth_1(ev: Events, rng: random.Random) -> Events | None:
    denied = _first(ev, lambda e: isinstance(e, Result) and e.status is ResultStatus.DENIED)
    if not isinstance(denied, Result):
        return None
    return _insert_after(ev, denied.seq - 1, EffectStart(seq=0, t=0, occ=denied.occ))


def _auth_2(ev: Events, rng: random.Random) -> Events | None:
    for batch in _batches(ev):
        starts = [s for s in batch if ev[s].kind == "effect_start"]
        if not starts:
            continue
        first = ev[starts[0]]
        assert isinstance(first, EffectStart)
        late = [s for s in batch if isinstance(ev[s], DecisionEvent) and s < first.seq]
        occ = next((ev[s].occ for s in reversed(late) if ev[s].occ != first.occ), None)  # type: ignore[union-attr]
        if occ is None:
            continue
        group = [s for s in batch if s < first.seq and getattr(ev[s], "occ", None) == occ]
        return _move_after(ev, group, first.seq)
    return None


def _decision_with(ev: Events, pred: Callable[[DecisionEvent], bool]) -> DecisionEvent | None:
    found = _first(ev, lambda e: isinstance(e, DecisionEvent) and pred(e))
    return found if isinstance(found, DecisionEvent) else None


def _perm_1(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: True)
    if d is None:
        return None
    return _replace(ev, d.seq, stage="scope" if d.stage == "mode" else "mode")


def _perm_2(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is not Decision.DENY)
    if d is None:
        return None
    deny = RuleRef(behavior=RuleBehavior.DENY, source=Source.PROJECT, pattern="Bash(rm:*)")
    facts = d.facts.model_copy(update={"rules": (*d.facts.rules, deny)})
    return _replace(ev, d.seq, facts=facts)


def _perm_3(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ALLOW)
    if d is None:
        return None
    return _replace(ev, d.seq, facts=d.facts.model_copy(update={"protected": True}))


def _perm_4(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ALLOW)
    if d is None:
        return None
    facts = d.facts.model_copy(update={"mode": Mode.PLAN, "kind": ToolKind.EDIT})
    return _replace(ev, d.seq, facts=facts)


def _perm_5(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ASK)
    if d is None:
        return None
    return _replace(ev, d.seq, facts=d.facts.model_copy(update={"mode": Mode.DONT_ASK}))


def _perm_6(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ASK)
    if d is None or not isinstance(ev[d.seq + 1], AskResolved):
        return None
    out = _replace(ev, d.seq, route=Route.HEADLESS)
    return _replace(out, d.seq + 1, resolver="user")


def _close_1(ev: Events, rng: random.Random) -> Events | None:
    r = _first(ev, lambda e: e.kind == "result")
    return None if r is None else _insert_after(ev, r.seq, r)


def _close_2(ev: Events, rng: random.Random) -> Events | None:
    for batch in _batches(ev):
        if ev[batch[-1]].kind != "results_sent":
            continue
        result = next((s for s in batch if ev[s].kind == "result"), None)
        if result is not None:
            return _renumber([x for x in _tagged(ev) if x[0] != result])
    return None


def _close_3(ev: Events, rng: random.Random) -> Events | None:
    sent = _first(ev, lambda e: e.kind == "results_sent" and len(e.occs) > 1)
    if sent is None:
        return None
    occs = list(sent.occs)  # type: ignore[union-attr]
    occs[0], occs[1] = occs[1], occs[0]
    return _replace(ev, sent.seq, occs=tuple(occs))


def _close_4(ev: Events, rng: random.Random) -> Events | None:
    a = _first(ev, lambda e: e.kind == "assistant" and bool(e.calls))
    if a is None:
        return None
    stray = Result(seq=0, t=0, occ=f"{a.turn}.99", call_id="toolu_stray", status=ResultStatus.OK)  # type: ignore[union-attr]
    return _insert_after(ev, a.seq, stray)


def _close_5(ev: Events, rng: random.Random) -> Events | None:
    rep = _first(ev, lambda e: e.kind == "repair" and bool(e.stubbed))
    if rep is None:
        return None
    return _replace(ev, rep.seq, stubbed=tuple(rep.stubbed[:-1]))  # type: ignore[union-attr]


def _close_6(ev: Events, rng: random.Random) -> Events | None:
    start = _first(ev, lambda e: e.kind == "turn_start" and e.turn > 1)
    if start is None:
        return None
    split = Compaction(seq=0, t=0, turn=start.turn, calls_removed=("1.0",), results_removed=())  # type: ignore[union-attr]
    return _insert_after(ev, start.seq, split)


def _starts_in_batches(ev: Events) -> list[list[tuple[DecisionEvent, int]]]:
    """Per batch: (decision, seq of its effect_start) for each started call."""
    decided = _decisions(ev)
    out = []
    for batch in _batches(ev):
        started = [(decided[ev[s].occ], s) for s in batch if isinstance(ev[s], EffectStart)]  # type: ignore[union-attr]
        out.append(sorted(started, key=lambda x: int(x[0].occ.split(".")[1])))
    return out


def _index(d: DecisionEvent) -> int:
    return int(d.occ.split(".")[1])


def _sched_1(ev: Events, rng: random.Random) -> Events | None:
    for started in _starts_in_batches(ev):
        for x, xs in started:
            if x.cls is not CallClass.EXCLUSIVE:
                continue
            for y, ys in started:
                if _index(y) > _index(x) and y.cls is not CallClass.BACKGROUND:
                    return _move_after(ev, [ys], xs)
    return None


def _sched_2(ev: Events, rng: random.Random) -> Events | None:
    decided = _decisions(ev)
    for started in _starts_in_batches(ev):
        for a, as_ in started:
            for b, bs in started:
                if not (
                    a.cls is CallClass.QUEUE
                    and b.cls is CallClass.QUEUE
                    and a.key == b.key
                    and _index(b) > _index(a)
                ):
                    continue
                turn = a.occ.split(".")[0]
                between = (decided.get(f"{turn}.{i}") for i in range(_index(a) + 1, _index(b)))
                if all(d is None or d.cls is not CallClass.EXCLUSIVE for d in between):
                    return _move_after(ev, [bs], as_)
    return None


def _sched_3(ev: Events, rng: random.Random) -> Events | None:
    for started in _starts_in_batches(ev):
        for x, xs in started:
            if x.cls is not CallClass.EXCLUSIVE:
                continue
            for y, ys in started:
                if _index(y) > _index(x) and y.cls is not CallClass.EXCLUSIVE:
                    return _move_after(ev, [ys], xs - 1)
    return None


def _sched_4(ev: Events, rng: random.Random) -> Events | None:
    done = _first(ev, lambda e: e.kind == "job_done")
    return None if done is None else _replace(ev, done.seq, job="job-never-handed-out")


def _sched_5(ev: Events, rng: random.Random) -> Events | None:
    for batch in _batches(ev):
        if any(ev[s].kind in ("cancel", "interrupt") for s in batch):
            continue
        r = next((s for s in batch if isinstance(ev[s], Result)), None)
        if r is not None:
            return _replace(ev, r, status=ResultStatus.SKIPPED)
    return None


def _spawn_after_assistant(ev: Events, **fields: Any) -> Events | None:
    a = _first(ev, lambda e: e.kind == "assistant" and bool(e.calls))
    if a is None:
        return None
    return _insert_after(ev, a.seq, Spawn(seq=0, t=0, agent_id="child-x", **fields))


def _child_1(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.DEFAULT,
        child_tools=("read", "root_shell"),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "bash"),
    )


def _child_2(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.BYPASS,
        child_tools=("read",),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "bash"),
    )


def _child_3(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.DEFAULT,
        child_tools=("read",),
        parent_mode=Mode.PLAN,
        parent_tools=("read", "bash"),
    )


def _retry_1(ev: Events, rng: random.Random) -> Events | None:
    end = _first(ev, lambda e: e.kind == "effect_end" and e.committed)
    if end is None:
        return None
    return _insert_after(ev, end.seq, EffectStart(seq=0, t=0, occ=end.occ))  # type: ignore[union-attr]


MUTATORS: dict[str, Mutator] = {
    "TRACE-1": _trace_1,
    "LOOP-1": _loop_1,
    "LOOP-2": _loop_2,
    "AUTH-1": _auth_1,
    "AUTH-2": _auth_2,
    "PERM-1": _perm_1,
    "PERM-2": _perm_2,
    "PERM-3": _perm_3,
    "PERM-4": _perm_4,
    "PERM-5": _perm_5,
    "PERM-6": _perm_6,
    "CLOSE-1": _close_1,
    "CLOSE-2": _close_2,
    "CLOSE-3": _close_3,
    "CLOSE-4": _close_4,
    "CLOSE-5": _close_5,
    "CLOSE-6": _close_6,
    "SCHED-1": _sched_1,
    "SCHED-2": _sched_2,
    "SCHED-3": _sched_3,
    "SCHED-4": _sched_4,
    "SCHED-5": _sched_5,
    "CHILD-1": _child_1,
    "CHILD-2": _child_2,
    "CHILD-3": _child_3,
    "RETRY-1": _retry_1,
}

# A run rich in the features the mutators need.
RICH = SimConfig(
    turns=6,
    max_batch=6,
    p_interrupt=0.25,
    p_cancel=0.15,
    p_background=0.4,
    p_rules=0.5,
    queue_keys=1,
)


def break_trace(events: Events, invariant_id: str, rng: random.Random) -> Events | None:
    """Edit a valid trace so that `invariant_id` is broken; None if it can't be."""
    return MUTATORS[invariant_id](list(events), rng)


def broken_trace(
    invariant_id: str, seed: int = 0, attempts: int = 400
) -> tuple[TraceHeader, Events]:
    """The first simulated run from `seed` on that can be broken for the ID."""
    for s in range(seed, seed + attempts):
        header, events = simulate(s, RICH)
        broken = break_trace(events, invariant_id, random.Random(s))
        if broken is not None:
            return header, broken
    raise LookupError(f"no simulated run in {attempts} could be broken for {invariant_id}")
