"""Interruption, resume and repair (specs/loop.md, "Interruption, resume and
repair" and RETRY; specs/closure.md, "Repair").

An interrupt stops the batch (naming its stop's source, SCHED-5); a resumed
process first answers the calls its trace shows committed, then repairs: it
stubs exactly the calls still open (CLOSE-5), never one the trace shows
committed (RETRY-2), as `unknown` exactly when its effect may have happened
(RETRY-3), naming the calls whose commit was recovered from their exit
record (RETRY-4), with the calls' ids in call order (CLOSE-3, CLOSE-4).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import attrs

from metis_trace import CallClass
from metis_trace import Interrupt
from metis_trace import Repair
from metis_trace import Resume

from ._causes import STOP_SOURCES
from ._causes import named_source
from ._closure import _without
from ._closure import ids_problem
from ._loop_state import CallLike
from ._loop_state import LoopState
from ._loop_state import Outcome
from ._loop_state import Phase
from ._loop_state import _diverge


def _interrupt(state: LoopState, e: Interrupt) -> Outcome:
    used = named_source(e.causes, state.sources, STOP_SOURCES)
    sourced = used is not None or not state.causes_recorded
    return attrs.evolve(
        state,
        phase=Phase.INTERRUPTED,
        cancelled=True,
        stop_sourced=state.stop_sourced or sourced,
        sources=_without(state.sources, used),
    )


def _resume(state: LoopState, e: Resume) -> Outcome:
    return attrs.evolve(state, phase=Phase.RESUMED)


def may_have_happened(call: CallLike) -> bool:
    """RETRY-3: its effect started and may have changed the world (a Safe call
    has no side effects; a committed one did)."""
    return call.started and (call.committed or call.cls is not CallClass.SAFE)


def committed_stub(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-2: a repair never stubs a call the trace shows committed (as
    interrupted or unknown): a resumed process answers it with its commit."""
    stubbed = set(e.stubbed)
    for c in calls:
        if c.occ in stubbed and c.committed:
            return f"repair stubs {c.occ}, whose commit the trace holds"
    return None


def stub_problem(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-3: a stub is `unknown` exactly when the call's effect may have happened."""
    stubbed = set(e.stubbed)
    extra = sorted(set(e.unknown) - stubbed)
    if extra:
        return f"marks {extra} unknown without stubbing them"
    unknown = set(e.unknown)
    for c in calls:
        if c.occ not in stubbed:
            continue
        if may_have_happened(c) and c.occ not in unknown:
            return f"stubs {c.occ} as interrupted, but its effect may have happened"
        if not may_have_happened(c) and c.occ in unknown:
            return f"stubs {c.occ} as unknown, but it had no effect (never started, or Safe)"
    return None


def recovered_problem(calls: Sequence[CallLike], e: Repair) -> str | None:
    """RETRY-4: the repair names exactly the calls whose commit was recovered."""
    claimed = set(e.recovered)
    actual = {c.occ for c in calls if c.recovered}
    if claimed - actual:
        missing = sorted(claimed - actual)
        return f"names {missing} recovered, but no recovered commit of them precedes it"
    if actual - claimed:
        return f"does not name {sorted(actual - claimed)}, whose commit was recovered"
    return None


def _repair(state: LoopState, e: Repair) -> Outcome:
    open_occs = state.open_occs()
    if tuple(e.stubbed) != open_occs:
        extra = sorted(set(e.stubbed) - set(open_occs))
        what = f"stubs closed or unknown {extra}" if extra else f"leaves {list(open_occs)} open"
        return _diverge(state, "CLOSE-5", f"repair {what}", state.assistant_seq, e.seq)
    stubbed = committed_stub(state.calls, e)
    if stubbed is not None:
        return _diverge(state, "RETRY-2", stubbed, state.assistant_seq, e.seq)
    stubs = stub_problem(state.calls, e)
    if stubs is not None:
        return _diverge(state, "RETRY-3", f"repair {stubs}", state.assistant_seq, e.seq)
    recovered = recovered_problem(state.calls, e)
    if recovered is not None:
        return _diverge(state, "RETRY-4", f"repair {recovered}", state.assistant_seq, e.seq)
    wrong = ids_problem(state.calls, e.call_ids)
    if wrong is not None:
        return _diverge(state, wrong[0], wrong[1], state.assistant_seq, e.seq)
    # Stub results close the batch; the next request carries them in call order.
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))
