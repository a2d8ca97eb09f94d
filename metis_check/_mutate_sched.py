"""Invalid traces for the scheduler: the mutators of SCHED-1..6
(specs/scheduler.md).

SCHED-2 and SCHED-5 have one edit per clause (`SCHED_2_CLAUSES`,
`SCHED_5_CLAUSES`); their entry in `MUTATORS` (`_mutate.py`) breaks one of
the clauses, picked at random.
"""

from __future__ import annotations

import random

from metis_model._causes import SOURCE_KINDS
from metis_trace import CallClass
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Interrupt
from metis_trace import Result
from metis_trace import ResultStatus
from metis_trace import ToolKind

from ._mutate_base import Events
from ._mutate_base import Mutator
from ._mutate_base import _batches
from ._mutate_base import _decisions
from ._mutate_base import _first
from ._mutate_base import _move_after
from ._mutate_base import _replace

__all__ = ["SCHED_2_CLAUSES", "SCHED_5_CLAUSES"]


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
