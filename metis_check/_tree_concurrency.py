"""The spawn guard's concurrency limit over a tree of traces (CHILD-4).

Each trace's `t` maps onto the system's CLOCK_MONOTONIC through its header's
`meta.clock` (`t = monotonic - origin`, kept across a reopen in the same
boot: metis_runtime's TraceWriter), so traces written by different
processes of one boot can be compared. A child's guard slot is surely held
from its `spawn` event in its parent's trace (the supervisor records it
after the guard admitted the child) to its own trace's last event (the slot
is released only after the child's run has ended). At each spawn, the
children whose sure intervals contain it were running at once; more of
them than `max_concurrent` is a violation. One-sided: a slot also held
outside its sure interval is not counted, and a trace with no clock or of
another boot says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from metis_trace import Spawn
from metis_trace import TraceEvent
from metis_trace import TraceHeader

__all__ = ["running_at_once"]

Traces = Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]]


def _origin(header: TraceHeader, boot: object) -> float | None:
    clock: Any = header.meta.get("clock")
    if not isinstance(clock, Mapping) or boot is None or clock.get("boot_id") != boot:
        return None
    origin = clock.get("origin")
    return float(origin) if isinstance(origin, int | float) else None


def running_at_once(traces: Traces, root: TraceHeader) -> list[tuple[str, tuple[str, ...]]]:
    """Per spawn (by the spawned agent's id): the children surely running at
    that moment, itself included, when the traces can show it."""
    clock: Any = root.meta.get("clock")
    boot = clock.get("boot_id") if isinstance(clock, Mapping) else None
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    for header, events in traces.values():
        origin = _origin(header, boot)
        if origin is None:
            continue
        for e in events:
            if isinstance(e, Spawn):
                started[e.agent_id] = e.t + origin
        if header.parent_id is not None and header.agent_id is not None and events:
            ended[header.agent_id] = events[-1].t + origin
    sure = {a: (s, ended[a]) for a, s in started.items() if a in ended and ended[a] >= s}
    return [
        (agent, tuple(sorted(b for b, (s2, e2) in sure.items() if s2 <= s <= e2)))
        for agent, (s, _) in sorted(sure.items(), key=lambda kv: kv[1][0])
    ]
