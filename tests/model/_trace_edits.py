"""Helpers for invalid-trace tests: edit one event, run both checkers."""

from __future__ import annotations

from metis_check import check_trace
from metis_trace import TraceEvent
from metis_trace import TraceHeader


def first_ids(events: list[TraceEvent], header: TraceHeader) -> tuple[str | None, str | None]:
    """The first broken ID by the fast replay and by the specification's `step`."""
    fast = check_trace(events, header)
    slow = check_trace(events, header, reference=True)
    return (
        None if fast.first is None else fast.first.invariant,
        None if slow.first is None else slow.first.invariant,
    )


def replace_event(events: list[TraceEvent], seq: int, **changes: object) -> list[TraceEvent]:
    """`events` with the event at `seq` changed (fields not validated again)."""
    return [e.model_copy(update=changes) if e.seq == seq else e for e in events]
