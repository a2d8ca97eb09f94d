"""Hooks and permission decisions, call by call (specs/permissions.md, "The
staged order", "Routes and settling an ask", "Facts derived from the recorded
settings"; specs/children.md for CHILD-6).

A hook in force runs on a call before its decision, and a veto becomes a deny
(CHILD-6); the recorded decision is the one the staged order gives its facts
(PERM-1..5, `_permissions.py` `resolve`); the facts hold what the header's
recorded settings give the call (AUTH-4, `_derive.py`); a Queue edit's key
names what it writes (SCHED-2, `_interference.py`); and a headless or
background ask is settled at once, to the configured default (PERM-6).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs

from metis_trace import MUTATING_KINDS
from metis_trace import AskResolved
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import HookRef
from metis_trace import HookRun
from metis_trace import Mode
from metis_trace import RuleBehavior

from ._derive import Recorded
from ._derive import facts_problem
from ._interference import queue_key_problem
from ._loop_state import _WAITLESS
from ._loop_state import Divergence
from ._loop_state import LoopState
from ._loop_state import Outcome
from ._loop_state import _diverge
from ._loop_state import _lookup
from ._loop_state import _with_call
from ._permissions import resolve


def hooks_for(hooks: Sequence[HookRef], tool: str) -> tuple[str, ...]:
    """The ids of the hooks in force that cover `tool` (a glob over tool names)."""
    return tuple(h.id for h in hooks if fnmatch.fnmatchcase(tool, h.matcher))


def hook_problem(hooks: Sequence[HookRef], decided: bool, e: HookRun) -> str | None:
    """CHILD-6 for a hook's run: it is in force, and runs before the decision."""
    if all(h.id != e.hook for h in hooks):
        return f"hook {e.hook} ran on {e.occ} but is not in force"
    if decided:
        return f"hook {e.hook} ran on {e.occ} after its decision"
    return None


def _hook(state: LoopState, e: HookRun) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    problem = hook_problem(state.hooks, call.decision is not None, e)
    if problem is not None:
        return _diverge(state, "CHILD-6", problem, *call.events, e.seq)
    return _with_call(
        state, call, e.seq, hooks_run=(*call.hooks_run, e.hook), vetoed=call.vetoed or e.vetoed
    )


def enforcement_problem(
    hooks: Sequence[HookRef], tool: str, hooks_run: Sequence[str], vetoed: bool, d: Decision
) -> str | None:
    """CHILD-6 at a decision: a veto became a deny, and unless the gate denied
    first, every hook that covers the call ran before it."""
    if vetoed:
        return (
            None if d is Decision.DENY else f"a hook vetoed the call, but it was decided {d.value}"
        )
    if d is Decision.DENY or not hooks:
        return None
    missing = [h for h in hooks_for(hooks, tool) if h not in hooks_run]
    return f"hooks {missing} did not run before the decision" if missing else None


def _decision(state: LoopState, e: DecisionEvent) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.decision is not None:
        return _diverge(state, "LOOP-1", f"{e.occ} decided twice", *call.events, e.seq)
    problem = decision_problem(e)
    if problem is not None:
        return _diverge(state, problem[0], problem[1], call.events[0], e.seq)
    keyed = queue_key_problem(e)
    if keyed is not None:
        return _diverge(state, "SCHED-2", keyed, call.events[0], e.seq)
    derived = derived_problem(state.recorded, call.tool, call.input, e)
    if derived is not None:
        return _diverge(state, "AUTH-4", f"{e.occ}: {derived}", call.events[0], e.seq)
    enforced = enforcement_problem(state.hooks, call.tool, call.hooks_run, call.vetoed, e.decision)
    if enforced is not None:
        return _diverge(state, "CHILD-6", f"{e.occ}: {enforced}", *call.events, e.seq)
    state = _with_call(
        state,
        call,
        e.seq,
        decision=e.decision,
        cls=e.cls,
        key=e.key,
        reads=e.reads,
        writes=e.writes,
    )
    if e.decision is Decision.ASK and e.route in _WAITLESS:
        state = attrs.evolve(state, headless_ask=e.occ)
    return state


def _batch_writes(e: DecisionEvent) -> tuple[str, ...] | None:
    """The write footprint a decision records, where it states the call's
    writes: a Background call's detached work is outside its batch, so its
    footprint is empty by design (specs/scheduler.md, SCHED-6)."""
    return None if e.cls is CallClass.BACKGROUND else tuple(e.writes)


def derived_problem(
    recorded: Recorded | None, tool: str, input: Mapping[str, Any], e: DecisionEvent
) -> str | None:
    """AUTH-4: a fact the header's recorded settings give for the call that
    the decision's facts lack (`_derive`), or None."""
    if recorded is None:
        return None
    return facts_problem(recorded, tool, input, e.facts, (*e.reads, *e.writes), _batch_writes(e))[1]


def derived_exercised(
    recorded: Recorded | None, tool: str, input: Mapping[str, Any], e: DecisionEvent
) -> bool:
    """Whether AUTH-4 had something to check at this decision: the deriver was
    sure of a fact."""
    if recorded is None:
        return False
    return facts_problem(recorded, tool, input, e.facts, (*e.reads, *e.writes), _batch_writes(e))[0]


def decision_problem(e: DecisionEvent) -> tuple[str, str] | None:
    """The PERM invariant a recorded decision breaks, most specific first."""
    f, d = e.facts, e.decision
    if f.rules and d is not Decision.DENY and any(r.behavior is RuleBehavior.DENY for r in f.rules):
        return "PERM-2", f"a deny rule matched but the decision is {d.value}"
    if (f.protected or f.secret) and d is Decision.ALLOW:
        return "PERM-3", "a protected or secret path was allowed"
    if f.mode is Mode.PLAN and f.kind in MUTATING_KINDS and d is not Decision.DENY:
        return "PERM-4", f"plan mode gave {d.value} to a {f.kind.value} call"
    if f.mode is Mode.DONT_ASK and d is Decision.ASK:
        return "PERM-5", "dontAsk returned ask"
    expected = resolve(f)
    if (expected.decision, expected.stage.value) != (d, e.stage):
        return (
            "PERM-1",
            f"recorded {d.value} at stage {e.stage}, the facts give "
            f"{expected.decision.value} at stage {expected.stage.value}",
        )
    return None


def _ask_resolved(state: LoopState, e: AskResolved) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.decision is not Decision.ASK or call.approved is not None:
        return _diverge(state, "LOOP-1", f"{e.occ} has no pending ask", *call.events, e.seq)
    if state.headless_ask == e.occ:
        wanted = state.headless_default is Decision.ALLOW
        if e.resolver != "headless-default" or e.approved != wanted:
            return _diverge(
                state,
                "PERM-6",
                f"headless ask settled by {e.resolver} as {e.approved}, not the configured default",
                *call.events,
                e.seq,
            )
        state = attrs.evolve(state, headless_ask=None)
    return _with_call(state, call, e.seq, approved=e.approved)
