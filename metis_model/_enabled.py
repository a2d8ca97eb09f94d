"""Explicit enabled actions on calls: what a correct runtime may do next in a
state (specs/loop.md, "Phases"; specs/scheduler.md; specs/closure.md).

`settled`: batch preflight is over (AUTH-2); `startable`: the effects that
may start now (AUTH-1..3, SCHED-1..3, SCHED-5, SCHED-6, RETRY-1);
`closable`: the calls that may be given a terminal result now, and with
which status. The trace generators (`metis_check`) and the protocol of the
proofs are built on them.
"""

from __future__ import annotations

from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import ResultStatus

from ._interference import interference
from ._loop_state import LoopState
from ._loop_state import Phase


def settled(state: LoopState) -> bool:
    """Batch preflight is over: every call decided, every ask answered."""
    return all(
        c.decision is not None and not (c.decision is Decision.ASK and c.approved is None)
        for c in state.calls
    )


def startable(state: LoopState) -> tuple[str, ...]:
    """Occurrences whose effect may start now without breaking an invariant."""
    if state.phase is not Phase.BATCH or not settled(state) or state.cancelled:
        return ()
    return tuple(
        c.occ
        for c in state.calls
        if c.admitted
        and not (c.running or c.finished or c.closed or c.committed)
        and (state.tools is None or c.tool in state.tools)
        and interference(state.calls, c) is None
    )


def closable(state: LoopState) -> tuple[tuple[str, ResultStatus], ...]:
    """Occurrences that may be given a terminal result now, with that status."""
    if state.phase is not Phase.BATCH:
        return ()
    out: list[tuple[str, ResultStatus]] = []
    for c in state.calls:
        if c.closed or c.running:
            continue
        if c.finished:
            ok = c.outcome is EffectOutcome.OK
            out.append((c.occ, ResultStatus.OK if ok else ResultStatus.ERROR))
        elif c.decision is Decision.DENY or (c.decision is Decision.ASK and c.approved is False):
            out.append((c.occ, ResultStatus.DENIED))
        elif state.cancelled and c.decision is not None:
            out.append((c.occ, ResultStatus.SKIPPED))
    return tuple(out)
