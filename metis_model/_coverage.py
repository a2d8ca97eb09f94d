"""What an event puts to the test: the invariant checks that had something to
check when `step` took it (specs/trace-format.md, "Coverage").

`exercised` counts a check only where the situation it is about is present
(a deny rule for PERM-2, a shared key for SCHED-2, a stub for RETRY-3...);
the fast replay (`metis_check/_replay.py`) counts the same, and the suite's
coverage requirement reads both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metis_trace import MUTATING_KINDS
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import RuleBehavior
from metis_trace import RunStatus
from metis_trace import TraceEvent

from ._closure import _NEEDS_CANCEL
from ._decisions import derived_exercised
from ._decisions import hooks_for
from ._interference import footprints_conflict
from ._interference import queue_edit
from ._loop_state import _FOREGROUND
from ._loop_state import _WAITLESS
from ._loop_state import Call
from ._loop_state import LoopState
from ._loop_state import Phase


def exclusive_pair(calls: Sequence[Call]) -> bool:
    """SCHED-1/SCHED-3 have something to check: the batch holds an Exclusive
    call and another admitted foreground call."""
    foreground = [c for c in calls if c.admitted and c.cls in _FOREGROUND]
    return len(foreground) > 1 and any(c.cls is CallClass.EXCLUSIVE for c in foreground)


def shares_key(calls: Sequence[Call], call: Call) -> bool:
    return call.cls is CallClass.QUEUE and any(
        o is not call and o.cls is CallClass.QUEUE and o.key == call.key for o in calls
    )


def exercised(state: LoopState, e: TraceEvent) -> list[str]:
    """The invariant checks that event `e`, taken in `state`, actually put to
    the test: a check counts only where the situation it is about is present
    (a deny rule for PERM-2, a shared key for SCHED-2, a stub for RETRY-3...).
    Every event is checked for TRACE-1 and LOOP-1. Specified in
    specs/trace-format.md ("Coverage"); the fast replay counts the same."""
    out = ["TRACE-1", "LOOP-1"]
    f: Any = e
    index = state.index_of.get(getattr(e, "occ", ""), -1) if e.kind != "job_done" else -1
    call = state.calls[index] if index >= 0 else None
    kind = e.kind
    if kind == "compaction":
        out += ["CLOSE-6", "CLOSE-8"]
    elif kind == "hook":
        out.append("CHILD-6")
    elif kind == "decision":
        facts = f.facts
        out.append("PERM-1")
        if any(r.behavior is RuleBehavior.DENY for r in facts.rules):
            out.append("PERM-2")
        if facts.protected or facts.secret:
            out.append("PERM-3")
        if facts.mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
            out.append("PERM-4")
        if facts.mode is Mode.DONT_ASK:
            out.append("PERM-5")
        if f.decision is Decision.ASK and f.route in _WAITLESS:
            out.append("PERM-6")
        if call is not None and hooks_for(state.hooks, call.tool):
            out.append("CHILD-6")
        if call is not None and derived_exercised(state.recorded, call.tool, call.input, f):
            out.append("AUTH-4")
        if queue_edit(f):
            out.append("SCHED-2")
    elif kind == "effect_start" and call is not None:
        out.append("AUTH-1")
        if state.tools is not None:
            out.append("AUTH-3")
        if not state.effects_started and len(state.calls) > 1:
            out.append("AUTH-2")
        if call.started:
            out.append("RETRY-1")
        if exclusive_pair(state.calls):
            out += ["SCHED-1", "SCHED-3"]
        if shares_key(state.calls, call):
            out.append("SCHED-2")
        if any(o is not call and footprints_conflict(call, o) for o in state.calls):
            out.append("SCHED-6")
    elif kind == "commit" and f.recovered:
        out.append("RETRY-4")
    elif kind == "effect_end" and call is not None:
        if f.committed or call.committed:
            out.append("RETRY-2")
        if call.covered or f.outcome is EffectOutcome.CANCELLED:
            out.append("SCHED-5")
    elif kind in ("handshake", "job_done"):
        out.append("SCHED-4")
    elif kind == "result":
        out += ["CLOSE-1", "CLOSE-4"]
        failed = any(
            o is not call and (o.status is ResultStatus.ERROR or o.outcome is EffectOutcome.ERROR)
            for o in state.calls
        )
        ended_cancelled = call is not None and call.outcome is EffectOutcome.CANCELLED
        if f.status in _NEEDS_CANCEL or failed or ended_cancelled:
            out.append("SCHED-5")
        if state.phase is Phase.RESUMED or (call is not None and call.committed):
            out.append("RETRY-2")
    elif kind == "results_sent":
        out += ["CLOSE-2", "CLOSE-3", "CLOSE-4"]
    elif kind == "cancel":
        out.append("SCHED-5")
    elif kind == "resume":
        out += ["RETRY-1" for c in state.calls if c.committed and not c.closed]
    elif kind == "repair":
        out.append("CLOSE-5")
        out += ["RETRY-3"] * len(f.stubbed)
        if f.recovered or any(c.recovered for c in state.calls):
            out.append("RETRY-4")
        if state.calls:
            out += ["CLOSE-3", "CLOSE-4"]
    elif kind == "spawn":
        out += ["CHILD-1", "CHILD-2"]
        if Mode.PLAN in (f.parent_mode, f.child_mode):
            out.append("CHILD-3")
    elif kind == "run_end":
        out.append("CLOSE-2")
        if f.status is RunStatus.COMPLETED:
            out += ["LOOP-2", "SCHED-4"]
    return out
