"""Invalid traces for the trace's order and the agent loop: the mutators of
TRACE-1 (specs/trace-format.md), LOOP-1, LOOP-2 and RETRY-1..4 (specs/loop.md).

Each takes a valid trace and returns a copy in which its ID is the first to
fail, or None when the trace lacks what the edit needs (`_mutate.py`).
"""

from __future__ import annotations

import random

from metis_trace import NOT_JOURNALED
from metis_trace import Assistant
from metis_trace import Commit
from metis_trace import EffectEnd
from metis_trace import EffectStart
from metis_trace import Repair
from metis_trace import Result

from ._mutate_base import Events
from ._mutate_base import _first
from ._mutate_base import _insert_after
from ._mutate_base import _renumber
from ._mutate_base import _replace
from ._mutate_base import _tagged


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
