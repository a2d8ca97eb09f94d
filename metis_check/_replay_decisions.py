"""The replay's handlers of a call's admission: hooks, decisions (their
verdicts remembered for the run), and the answers to asks."""

from __future__ import annotations

from typing import Any

from metis_model._decisions import _batch_writes
from metis_model._decisions import decision_problem
from metis_model._decisions import enforcement_problem
from metis_model._decisions import hook_problem
from metis_model._decisions import hooks_for
from metis_model._derive import facts_problem
from metis_model._interference import queue_edit
from metis_model._interference import queue_key_problem
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior

from ._replay_calls import _ALLOW
from ._replay_calls import _ASK
from ._replay_calls import _about
from ._replay_calls import _Call
from ._replay_calls import _Stop
from ._replay_state import _ReplayState

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)

# How many (facts, decision, stage) verdicts a replay remembers at most, and
# the marker of one not seen yet (None is a verdict: no problem).
_PROBLEMS_KEPT = 256
_UNSEEN = ("unseen", "")


class _DecisionHandlers(_ReplayState):
    """The handlers of hooks, decisions and asks."""

    def _hook(self, e: Any) -> None:
        call = self._call_of(e)
        problem = hook_problem(self.hooks, call.decision is not None, e)
        if problem is not None:
            raise _Stop("CHILD-6", problem, _about(call, e.seq))
        call.events.append(e.seq)
        call.hooks_run = (*call.hooks_run, e.hook)
        call.vetoed = call.vetoed or e.vetoed
        self.count("CHILD-6")

    def _decision(self, e: Any) -> None:
        call = self._call_of(e)
        if call.decision is not None:
            raise _Stop("LOOP-1", f"{e.occ} decided twice", _about(call, e.seq))
        problem = self._decision_problem(e)
        if problem is not None:
            raise _Stop(problem[0], problem[1], [call.events[0], e.seq])
        keyed = queue_key_problem(e)
        if keyed is not None:
            raise _Stop("SCHED-2", keyed, [call.events[0], e.seq])
        sure = self.recorded is not None and self._check_derived(call, e)
        decision = e.decision
        hooks = self.hooks
        if hooks or call.vetoed:
            enforced = enforcement_problem(hooks, call.tool, call.hooks_run, call.vetoed, decision)
            if enforced is not None:
                raise _Stop("CHILD-6", f"{e.occ}: {enforced}", _about(call, e.seq))
            if hooks_for(hooks, call.tool):
                self.count("CHILD-6")
        call.events.append(e.seq)
        call.decision = decision
        call.admitted = decision is _ALLOW
        call.cls = e.cls
        call.key = e.key
        call.reads = e.reads
        call.writes = e.writes
        self._count_decision(e.facts, decision, e.route)
        if sure:  # counted once the decision passed every check, as `step` counts
            self.count("AUTH-4")
        if queue_edit(e):
            self.count("SCHED-2")
        if decision is _ASK and e.route in _WAITLESS:
            self.headless_ask = e.occ

    def _check_derived(self, call: _Call, e: Any) -> bool:
        """AUTH-4: the facts include what the recorded settings give
        (`_derive`); whether the deriver was sure of anything."""
        assert self.recorded is not None
        footprint = (*e.reads, *e.writes)
        sure, problem = facts_problem(
            self.recorded, call.tool, call.input, e.facts, footprint, _batch_writes(e)
        )
        if problem is not None:
            raise _Stop("AUTH-4", f"{e.occ}: {problem}", [call.events[0], e.seq])
        return sure

    def _count_decision(self, facts: Facts, decision: Decision, route: Route) -> None:
        """`_coverage.exercised` for a decision: PERM-1 always (counted from the
        transitions), the others where their situation is present."""
        if facts.rules and any(r.behavior is RuleBehavior.DENY for r in facts.rules):
            self.count("PERM-2")
        if facts.protected or facts.secret:
            self.count("PERM-3")
        mode = facts.mode
        if mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
            self.count("PERM-4")
        elif mode is Mode.DONT_ASK:
            self.count("PERM-5")
        if decision is _ASK and route in _WAITLESS:
            self.count("PERM-6")

    def _decision_problem(self, e: Any) -> tuple[str, str] | None:
        """`decision_problem(e)`, remembered for the run.

        It is a pure function of the facts, the decision and the stage;
        `Facts` is frozen and compares by value (a validated event holds enum
        members, so equal facts read alike). A run repeats the same few, and
        a lookup is several times cheaper than resolving the facts again.
        Kept small, so that a streamed trace is still replayed in constant memory.
        """
        key = (e.facts, e.decision, e.stage)
        try:
            problem = self._problems.get(key, _UNSEEN)
        except TypeError:  # unhashable facts (not a validated event): nothing to remember
            return decision_problem(e)
        if problem is _UNSEEN:
            if len(self._problems) >= _PROBLEMS_KEPT:
                self._problems.clear()
            problem = self._problems[key] = decision_problem(e)
        return problem

    def _ask_resolved(self, e: Any) -> None:
        call = self._call_of(e)
        if call.decision is not _ASK or call.approved is not None:
            raise _Stop("LOOP-1", f"{e.occ} has no pending ask", _about(call, e.seq))
        if self.headless_ask == e.occ:
            wanted = self.headless_default is _ALLOW
            if e.resolver != "headless-default" or e.approved != wanted:
                raise _Stop(
                    "PERM-6",
                    f"headless ask settled by {e.resolver} as {e.approved}, "
                    "not the configured default",
                    _about(call, e.seq),
                )
            self.headless_ask = None
        call.events.append(e.seq)
        call.approved = e.approved
        call.admitted = e.approved is True
