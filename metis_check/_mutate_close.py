"""Invalid traces for terminal-result closure: the mutators of CLOSE-1..6
and CLOSE-8 (specs/closure.md; CLOSE-8, what a compaction leaves, is stated in
specs/loop.md). CLOSE-7 and CLOSE-9 have no per-trace mutator.
"""

from __future__ import annotations

import random

from metis_trace import Compaction
from metis_trace import MessageShape
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus

from ._mutate_base import Events
from ._mutate_base import _batches
from ._mutate_base import _first
from ._mutate_base import _insert_after
from ._mutate_base import _renumber
from ._mutate_base import _replace
from ._mutate_base import _tagged


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
