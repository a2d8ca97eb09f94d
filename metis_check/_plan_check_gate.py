"""A step's mediation, against the gate and the segment's trace.

A step that ran had the gate's allow or an approved ask, a denied one a deny
or a rejected ask (PLAN-1); an approved ask used an unused approval of this
turn bound to the step's action (PLAN-9); and the segment's trace has the
step's call, decision and start (PLAN-1).
"""

from __future__ import annotations

from metis_model.plan._consent import action_for
from metis_model.plan._consent import authorizes
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectStart
from metis_trace import ExecutorInfo
from metis_trace import StepRecord

from ._plan_check_base import _RAN
from ._plan_check_base import _CheckerBase
from ._plan_check_base import _redacted


class _GateChecks(_CheckerBase):
    """The checks of a step's mediation: gate, approval, trace."""

    def _mediation(self, r: StepRecord, executor: ExecutorInfo) -> None:
        admitted = r.decision is Decision.ALLOW or (
            r.decision is Decision.ASK and r.approved is True
        )
        if r.status in _RAN:
            self.expect(
                "PLAN-1",
                admitted and r.occ is not None,
                f"step {r.index} ran without the gate's allow or an approved ask",
            )
        else:
            self.expect(
                "PLAN-1",
                r.decision is Decision.DENY or (r.decision is Decision.ASK and r.approved is False),
                f"step {r.index} denied without a deny or a rejected ask",
            )
        if r.decision is Decision.ASK and r.approved:
            self._approval(r, executor)
        if r.occ is not None:
            self.occs.setdefault(r.segment, set()).add(r.occ)
            self._against_trace(r)

    def _approval(self, r: StepRecord, executor: ExecutorInfo) -> None:
        args = r.resolved_args or {}
        action = action_for(self.h.owner, self.h.turn_id, executor, args)
        if _redacted(args) and r.approval is not None:
            # A credential in the arguments was redacted in the log: their digest
            # cannot be recomputed here; every other field is still compared.
            action = action.model_copy(update={"args_digest": r.approval.args_digest})
        dialog = r.approval_dialog
        granted = self.granted.get(dialog) if dialog is not None else None
        ok = (
            r.approval is not None
            and granted is not None
            and granted == r.approval
            and authorizes(r.approval, action, used=dialog in self.used)
        )
        self.expect(
            "PLAN-9",
            ok,
            f"step {r.index}: its ask was approved, but no unused approval granted in this "
            f"turn is bound to {action.tool} with these arguments and destination",
        )
        if dialog is not None:
            self.used.add(dialog)

    def _against_trace(self, r: StepRecord) -> None:
        if self.traces is None or r.segment not in self.traces:
            return
        _, events = self.traces[r.segment]
        occ = r.occ
        call = next(
            (c for e in events if isinstance(e, Assistant) for c in e.calls if c.occ == occ), None
        )
        decision = next((e for e in events if isinstance(e, DecisionEvent) and e.occ == occ), None)
        started = any(isinstance(e, EffectStart) and e.occ == occ for e in events)
        answer = next((e for e in events if isinstance(e, AskResolved) and e.occ == occ), None)
        self.expect(
            "PLAN-1",
            call is not None and call.tool == r.tool and call.input == r.resolved_args,
            f"step {r.index}: the trace has no call {occ} of {r.tool} with its resolved arguments",
        )
        self.expect(
            "PLAN-1",
            decision is not None and decision.decision is r.decision,
            f"step {r.index}: the trace's decision for {occ} is not {r.decision}",
        )
        if r.status in _RAN:
            approved = decision is not None and (
                decision.decision is Decision.ALLOW
                or (answer is not None and answer.approved and answer.resolver == "user")
            )
            self.expect(
                "PLAN-1",
                approved and started,
                f"step {r.index}: {occ} started without an allow or a user's approval in the trace",
            )
