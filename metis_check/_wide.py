"""One wide batch, scheduled by class: the trace the replay's schedule
counters are measured and cross-checked on.

`wide_batch(width, shape)` serves the replay's agreement test (the fast
replay against folding `step`, one shape per way a schedule goes wrong) and
the throughput benchmark (the valid shape, no call refused). No randomness.
"""

from __future__ import annotations

from typing import Any

from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import Source
from metis_trace import StopRequest
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart

from ._generate import verdict_fields

__all__ = ["WIDE_SHAPES", "wide_batch"]

# Shapes of one wide batch: the invariant each breaks first (None: valid).
WIDE_SHAPES: dict[str, str | None] = {
    "scheduled": None,
    "one skipped": None,  # closed without running: it holds nothing back
    "exclusive among safe": "SCHED-1",
    "queue overlaps": "SCHED-2",
    "queue overtaken": "SCHED-2",
    "exclusive too early": "SCHED-3",
}


def wide_batch(
    width: int, shape: str = "scheduled", *, denied: int | None = 1
) -> tuple[TraceHeader, list[TraceEvent]]:
    """A run with one batch of `width` read calls, scheduled by their class:
    every fourth call queues on one key, the last is exclusive, the rest are
    safe; all are allowed but call `denied` (None: none), which a deny rule
    refuses (it holds nothing back). `shape` (one of WIDE_SHAPES) says how the
    schedule goes or goes wrong."""
    header = TraceHeader(run_id="wide", root_run_id="wide", tools=("read",), producer="wide_batch")
    facts = Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY)
    rule = RuleRef(behavior=RuleBehavior.DENY, source=Source.PROJECT, pattern="read")
    refused = facts.model_copy(update={"rules": (rule,)})
    events: list[TraceEvent] = []

    def add(factory: Any, **fields: Any) -> None:
        seq = len(events)
        events.append(factory(seq=seq, t=seq * 1e-6, causes=(seq - 1,) if seq else (), **fields))

    refs = [CallRef(occ=f"1.{i}", call_id=f"c{i}", tool="read") for i in range(width)]
    last = width - 1
    queued = [i for i in range(last) if i % 4 == 3]
    safe = [i for i in range(last) if i % 4 != 3]
    # The call left unstarted: never run ("exclusive too early"), skipped after
    # a cancel ("one skipped"), or overtaken in its queue ("queue overtaken").
    idle = {"exclusive too early": 0, "one skipped": 0, "queue overtaken": queued[0]}.get(shape)

    add(TurnStart, turn=1)
    add(Request, turn=1)
    add(Assistant, turn=1, calls=tuple(refs), stop_reason="tool_use")
    for i, ref in enumerate(refs):
        cls = (
            CallClass.EXCLUSIVE if i == last else CallClass.QUEUE if i in queued else CallClass.SAFE
        )
        key = "file:/ws/a.txt" if cls is CallClass.QUEUE else None
        verdict = verdict_fields(refused if i == denied else facts)
        add(DecisionEvent, occ=ref.occ, **verdict, cls=cls, key=key)
    for i in range(last):
        if i in (idle, denied):
            continue
        add(EffectStart, occ=refs[i].occ)
        if i in queued and shape != "queue overlaps":  # else the next one overlaps it
            add(EffectEnd, occ=refs[i].occ, outcome=EffectOutcome.OK)
    if shape == "exclusive among safe":
        add(EffectStart, occ=refs[last].occ)
    for i in safe:
        if i not in (idle, denied):
            add(EffectEnd, occ=refs[i].occ, outcome=EffectOutcome.OK)
    skipped = {idle, last} if shape == "one skipped" else set()
    if skipped:  # cancelled before the barrier: neither it nor the idle call starts
        add(StopRequest, via="test")  # the cancel's source: its causes name it (SCHED-5)
        add(Cancel, turn=1, cause=CancelCause.USER)
        for i in sorted(i for i in skipped if i is not None):
            add(Result, occ=refs[i].occ, call_id=refs[i].call_id, status=ResultStatus.SKIPPED)
    else:
        add(EffectStart, occ=refs[last].occ)
        add(EffectEnd, occ=refs[last].occ, outcome=EffectOutcome.OK)
    for i, ref in enumerate(refs):
        if i == denied:
            add(Result, occ=ref.occ, call_id=ref.call_id, status=ResultStatus.DENIED)
        elif i not in skipped:
            add(Result, occ=ref.occ, call_id=ref.call_id, status=ResultStatus.OK)
    add(
        ResultsSent,
        turn=1,
        occs=tuple(ref.occ for ref in refs),
        call_ids=tuple(ref.call_id for ref in refs),
    )
    add(TurnStart, turn=2)
    add(Request, turn=2)
    add(Assistant, turn=2)
    add(RunEnd, status=RunStatus.COMPLETED)
    return header, events
