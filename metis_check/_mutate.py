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

from metis_model._causes import SOURCE_KINDS
from metis_trace import (
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
    HookRun,
    Interrupt,
    MessageShape,
    Mode,
    Repair,
    Result,
    ResultsSent,
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

from ._generate import SimConfig, simulate

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
    sent = _first(ev, lambda e: isinstance(e, ResultsSent) and len(set(e.call_ids)) > 1)
    if not isinstance(sent, ResultsSent):
        return None
    if rng.random() < 0.5:  # the occurrences out of order, or the ids the message held
        occs = list(sent.occs)
        occs[0], occs[1] = occs[1], occs[0]
        return _replace(ev, sent.seq, occs=tuple(occs))
    ids = list(sent.call_ids)
    j = next(i for i, x in enumerate(ids) if x != ids[0])
    ids[0], ids[j] = ids[j], ids[0]
    return _replace(ev, sent.seq, call_ids=tuple(ids))


def _close_4(ev: Events, rng: random.Random) -> Events | None:
    if rng.random() < 0.5:  # a results message holding an id no call has
        sent = _first(ev, lambda e: isinstance(e, ResultsSent))
        if isinstance(sent, ResultsSent):
            return _replace(ev, sent.seq, call_ids=(*sent.call_ids[:-1], "toolu_stray"))
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
    split = Compaction(
        seq=0,
        t=0,
        turn=start.turn,  # type: ignore[union-attr]
        calls_removed=("1.0",),
        results_removed=(),
        messages=(MessageShape(role="user", blocks=("text",)),),
    )
    return _insert_after(ev, start.seq, split)


def _close_8(ev: Events, rng: random.Random) -> Events | None:
    start = _first(ev, lambda e: e.kind == "turn_start" and e.turn > 1)
    if start is None:
        return None
    shapes = [
        (MessageShape(role="assistant", blocks=("text",)),),  # not a user message first
        (  # a call without its result
            MessageShape(role="user", blocks=("text",)),
            MessageShape(role="assistant", blocks=("call:toolu_x",)),
            MessageShape(role="user", blocks=("text",)),
        ),
        (MessageShape(role="user", blocks=()),),  # an empty message
    ]
    cut = Compaction(seq=0, t=0, turn=start.turn, step="snip", messages=rng.choice(shapes))  # type: ignore[union-attr]
    return _insert_after(ev, start.seq, cut)


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


def _after_exclusive(ev: Events, unless: CallClass, shift: int) -> Events | None:
    """Move a later call of the batch, not of class `unless`, to start just after
    the event `shift` from an Exclusive call's start."""
    for started in _starts_in_batches(ev):
        for x, xs in started:
            if x.cls is not CallClass.EXCLUSIVE:
                continue
            for y, ys in started:
                if _index(y) > _index(x) and y.cls is not unless:
                    return _move_after(ev, [ys], xs + shift)
    return None


def _sched_1(ev: Events, rng: random.Random) -> Events | None:
    return _after_exclusive(ev, CallClass.BACKGROUND, 0)


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
    return _after_exclusive(ev, CallClass.EXCLUSIVE, -1)


def _sched_6(ev: Events, rng: random.Random) -> Events | None:
    """A Safe call and a writer that ran at the same time: make the Safe one
    read what the writer writes."""
    decided = _decisions(ev)
    for batch in _batches(ev):
        running: list[str] = []
        for s in batch:
            e = ev[s]
            if isinstance(e, EffectStart):
                d = decided[e.occ]
                for other in running:
                    o = decided[other]
                    pair = [(d, o), (o, d)]
                    for safe, writer in pair:
                        if safe.cls is CallClass.SAFE and writer.cls is CallClass.QUEUE:
                            return _replace(ev, safe.seq, reads=writer.writes or ("/",))
                running.append(e.occ)
            elif isinstance(e, EffectEnd) and e.occ in running:
                running.remove(e.occ)
    return None


def _sched_2_key(ev: Events, rng: random.Random) -> Events | None:
    """A Queue edit call that also writes a file its key does not name (an
    integration classed as one file's edit: specs/scheduler.md, SCHED-2)."""
    for d in _decisions(ev).values():
        if d.cls is CallClass.QUEUE and d.facts.kind is ToolKind.EDIT:
            other = f"{d.writes[0] if d.writes else '/ws/f'}.also"
            return _replace(ev, d.seq, writes=(*d.writes, other))
    return None


SCHED_2_CLAUSES: dict[str, Mutator] = {"overlap": _sched_2, "key": _sched_2_key}
"""SCHED-2's clauses, one edit each: two calls of a key overlap or overtake,
and a Queue edit writes beyond its key."""


def _one_of(clauses: dict[str, Mutator]) -> Mutator:
    """An invariant's mutator that breaks one of its clauses, tried in a
    random order until one applies."""

    def mutate(ev: Events, rng: random.Random) -> Events | None:
        names = list(clauses)
        rng.shuffle(names)
        for name in names:
            broken = clauses[name](ev, rng)
            if broken is not None:
                return broken
        return None

    return mutate


def _sched_4(ev: Events, rng: random.Random) -> Events | None:
    done = _first(ev, lambda e: e.kind == "job_done")
    return None if done is None else _replace(ev, done.seq, job="job-never-handed-out")


def _sched_5_cover(ev: Events, rng: random.Random) -> Events | None:
    """A cancel whose cause does not cover what it names."""
    cancel = _first(ev, lambda e: isinstance(e, Cancel))
    if not isinstance(cancel, Cancel):
        return None
    if cancel.cause is CancelCause.TIMEOUT:
        return _replace(ev, cancel.seq, cause=CancelCause.USER)
    return _replace(ev, cancel.seq, cause=CancelCause.TIMEOUT)


def _sched_5_skipped(ev: Events, rng: random.Random) -> Events | None:
    """A result skipped in a batch nothing cancelled."""
    for batch in _batches(ev):
        if any(ev[s].kind in ("cancel", "interrupt") for s in batch):
            continue
        r = next((s for s in batch if isinstance(ev[s], Result)), None)
        if r is not None:
            return _replace(ev, r, status=ResultStatus.SKIPPED)
    return None


def _unsourced(ev: Events, index: int) -> Events:
    """The event at `index` with no causal edge to a recorded source."""
    causes = tuple(c for c in ev[index].causes if ev[c].kind not in SOURCE_KINDS)
    return _replace(ev, index, causes=causes)


def _sched_5_user_source(ev: Events, rng: random.Random) -> Events | None:
    """A user cancel that names no source: the runtime's word alone (a failing
    call cancelling its siblings as `user`)."""
    cancel = _first(ev, lambda e: isinstance(e, Cancel) and e.cause is CancelCause.USER)
    return None if cancel is None else _unsourced(ev, cancel.seq)


def _sched_5_interrupt_source(ev: Events, rng: random.Random) -> Events | None:
    """An interrupt that cancels running effects but names no source."""
    for e in ev:
        if isinstance(e, Interrupt) and any(ev[c].kind in SOURCE_KINDS for c in e.causes):
            for x in ev[e.seq + 1 :]:
                if x.kind in ("resume", "run_end"):
                    break
                if isinstance(x, EffectEnd) and x.outcome is EffectOutcome.CANCELLED:
                    return _unsourced(ev, e.seq)
    return None


def _sched_5_sink_source(ev: Events, rng: random.Random) -> Events | None:
    """A sink failure with no sink error: a user's cancel relabelled."""
    cancel = _first(ev, lambda e: isinstance(e, Cancel) and e.cause is not CancelCause.TIMEOUT)
    if not isinstance(cancel, Cancel):
        return None
    if cancel.cause is CancelCause.SINK_FAILURE:
        return _unsourced(ev, cancel.seq)
    return _replace(ev, cancel.seq, cause=CancelCause.SINK_FAILURE)


def _sched_5_limit(ev: Events, rng: random.Random) -> Events | None:
    """A timeout that states another limit than its call recorded (or the
    call recorded none)."""
    cancel = _first(ev, lambda e: isinstance(e, Cancel) and e.cause is CancelCause.TIMEOUT)
    if not isinstance(cancel, Cancel) or cancel.limit_s is None:
        return None
    if rng.random() < 0.5:
        return _replace(ev, cancel.seq, limit_s=cancel.limit_s / 2)
    start = next(
        (
            e
            for e in reversed(ev[: cancel.seq])
            if isinstance(e, EffectStart) and e.occ in cancel.occs
        ),
        None,
    )
    return None if start is None else _replace(ev, start.seq, limit_s=None)


def _sched_5_closed_as(ev: Events, rng: random.Random) -> Events | None:
    """A call whose effect ended cancelled, closed as `error` (the fault matrix's case)."""
    ended = {e.occ: e.seq for e in ev if isinstance(e, EffectEnd) and not e.committed}
    for e in ev:
        if isinstance(e, EffectEnd) and e.outcome is EffectOutcome.CANCELLED and not e.committed:
            r = next((x for x in ev[e.seq + 1 :] if isinstance(x, Result) and x.occ == e.occ), None)
            if r is not None and r.status is ResultStatus.CANCELLED and ended[e.occ] == e.seq:
                return _replace(ev, r.seq, status=ResultStatus.ERROR)
    return None


SCHED_5_CLAUSES: dict[str, Mutator] = {
    "cover": _sched_5_cover,
    "skipped": _sched_5_skipped,
    "user-source": _sched_5_user_source,
    "interrupt-source": _sched_5_interrupt_source,
    "sink-source": _sched_5_sink_source,
    "timeout-limit": _sched_5_limit,
    "closed-as": _sched_5_closed_as,
}
"""SCHED-5's clauses, one edit each (specs/scheduler.md, "Causes")."""


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
    # A child more permissive than its parent; or (mutant 21) a child that
    # asked for more than its parent's mode and was started anyway (its gate
    # capped it), or one that asked for plan and runs in default.
    child, requested = rng.choice(
        [(Mode.BYPASS, None), (Mode.DEFAULT, Mode.BYPASS), (Mode.DEFAULT, Mode.PLAN)]
    )
    return _spawn_after_assistant(
        ev,
        child_mode=child,
        child_tools=("read",),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "bash"),
        requested_mode=requested,
    )


def _child_3(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.DEFAULT,
        child_tools=("read",),
        parent_mode=Mode.PLAN,
        parent_tools=("read", "bash"),
    )


def _auth_3(ev: Events, rng: random.Random) -> Events | None:
    """A call that ran names a tool the header does not list."""
    started = {e.occ for e in ev if isinstance(e, EffectStart)}
    for e in ev:
        if isinstance(e, Assistant) and any(c.occ in started for c in e.calls):
            calls = tuple(
                c.model_copy(update={"tool": "teleport"}) if c.occ in started else c
                for c in e.calls
            )
            return _replace(ev, e.seq, calls=calls)
    return None


def _auth_4(ev: Events, rng: random.Random) -> Events | None:
    """A gate that forgot what the recorded settings give (`SIM_PERMISSIONS`):
    a bash call's input becomes `rm -rf build` (a deny rule its facts lack),
    or, for one judged read-only, `uniq notes.txt out.txt` (it may write),
    or a file call's path a protected one (`.git/config`) or one out of
    scope (`/etc/passwd`), with the footprint the tool would record."""
    last: Assistant | None = None
    options: list[Events] = []
    for e in ev:
        if isinstance(e, Assistant):
            last = e
        if not isinstance(e, DecisionEvent) or last is None:
            continue
        ref = next((c for c in last.calls if c.occ == e.occ), None)
        if ref is None:
            continue
        facts = e.facts
        if ref.tool == "bash" and facts.kind is ToolKind.READ_ONLY:
            # A read-only verdict for a line that writes its output operand.
            options.append(_with_input(ev, last, e, {"command": "uniq notes.txt out.txt"}, None))
        elif ref.tool == "bash" and not any(r.pattern == "Bash(rm:*)" for r in facts.rules):
            options.append(_with_input(ev, last, e, {"command": "rm -rf build"}, None))
        elif ref.tool in ("edit", "write") and not facts.protected:
            options.append(_with_input(ev, last, e, {"path": ".git/config"}, "/ws/.git/config"))
        elif ref.tool == "read" and facts.in_scope:
            options.append(_with_input(ev, last, e, {"path": "/etc/passwd"}, "/etc/passwd"))
        if len(options) >= 3:
            break
    return rng.choice(options) if options else None


def _with_input(
    ev: Events,
    assistant: Assistant,
    decision: DecisionEvent,
    input: dict[str, Any],
    path: str | None,
) -> Events:
    calls = tuple(
        c.model_copy(update={"input": input}) if c.occ == decision.occ else c
        for c in assistant.calls
    )
    out = _replace(ev, assistant.seq, calls=calls)
    if path is None:
        return out
    if decision.facts.kind is ToolKind.READ_ONLY:
        return _replace(out, decision.seq, reads=(path,))
    # the key the tool would record with it: a Queue edit is keyed by its file
    key = f"file:{path}" if decision.cls is CallClass.QUEUE else decision.key
    return _replace(out, decision.seq, writes=(path,), key=key)


def _child_6(ev: Events, rng: random.Random) -> Events | None:
    """A hook that should have run before a decision did not (its event dropped)."""
    decided = _decisions(ev)
    for e in ev:
        if isinstance(e, HookRun) and not e.vetoed and decided[e.occ].decision is not Decision.DENY:
            return _renumber([x for x in _tagged(ev) if x[0] != e.seq])
    return None


def _retry_2(ev: Events, rng: random.Random) -> Events | None:
    """An effect ends committed without its commit in the trace; or (half the
    time, where the trace has one) a committed call's result does not report
    its commit: another output, or "not journaled" although its `effect_end`
    right after the commit proves the journal holds the output (mutant 06)."""
    commit = _first(ev, lambda e: isinstance(e, Commit))
    if commit is None:
        return None
    if rng.random() < 0.5:
        proven: set[str] = set()  # the effect_end came right after the commit
        digests: dict[str, str] = {}
        stopped = False
        for e in ev:
            if isinstance(e, Assistant):
                stopped = False
            elif e.kind == "interrupt":
                stopped = True
            elif isinstance(e, Commit) and e.digest:
                digests[e.occ] = e.digest
                after = ev[e.seq + 1] if e.seq + 1 < len(ev) else None
                if not stopped and isinstance(after, EffectEnd) and after.occ == e.occ:
                    proven.add(e.occ)
            elif isinstance(e, Result) and e.occ in digests:
                journaled = e.occ in proven and rng.random() < 0.5
                wrong = NOT_JOURNALED if journaled else e.content + " (changed)"
                return _replace(ev, e.seq, content=wrong)
    return _renumber([x for x in _tagged(ev) if x[0] != commit.seq])


def _retry_3(ev: Events, rng: random.Random) -> Events | None:
    """A repair stubs a call whose effect may have happened as interrupted
    (or one that never started as unknown)."""
    for e in ev:
        if not isinstance(e, Repair) or not e.stubbed:
            continue
        if e.unknown:
            return _replace(ev, e.seq, unknown=e.unknown[1:])
        return _replace(ev, e.seq, unknown=(e.stubbed[0],))
    return None


def _retry_4(ev: Events, rng: random.Random) -> Events | None:
    """A repair that does not say which outcome it recovered (or names one it
    did not recover); else a commit claimed recovered outside an interrupt."""
    for e in ev:
        if isinstance(e, Repair) and e.recovered:
            return _replace(ev, e.seq, recovered=e.recovered[1:])
    for e in ev:
        if isinstance(e, Repair) and e.stubbed:
            return _replace(ev, e.seq, recovered=(e.stubbed[0],))
    commit = _first(ev, lambda e: isinstance(e, Commit))
    if commit is None:
        return None
    return _replace(ev, commit.seq, recovered=True)


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
    "AUTH-3": _auth_3,
    "AUTH-4": _auth_4,
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
    "CLOSE-8": _close_8,
    "SCHED-1": _sched_1,
    "SCHED-2": _one_of(SCHED_2_CLAUSES),
    "SCHED-3": _sched_3,
    "SCHED-4": _sched_4,
    "SCHED-5": _one_of(SCHED_5_CLAUSES),
    "SCHED-6": _sched_6,
    "CHILD-1": _child_1,
    "CHILD-2": _child_2,
    "CHILD-3": _child_3,
    "CHILD-6": _child_6,
    "RETRY-1": _retry_1,
    "RETRY-2": _retry_2,
    "RETRY-3": _retry_3,
    "RETRY-4": _retry_4,
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
