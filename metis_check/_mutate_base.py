"""The shared edits of the invalid-trace mutators (`_mutate.py`).

A trace renumbered after an event is inserted, moved or dropped (causal edges
kept to the events that survive), one event's fields replaced, the batches of
a trace, its decisions by occurrence. No mutator lives here: they are by
family in `_mutate_loop.py`, `_mutate_sched.py`, `_mutate_close.py`,
`_mutate_perm.py` and `_mutate_child.py`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from metis_trace import DecisionEvent
from metis_trace import TraceEvent

__all__ = ["Events", "Mutator"]


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
