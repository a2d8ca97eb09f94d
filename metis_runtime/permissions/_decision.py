"""What a gate answers: its decision on a call, and how an ask was resolved.

One definition for every gate: the production `Gate`, the loop's
`PassThroughGate` and the wrappers around them (hooks, plan consent) all
return these. A leaf module (attrs and metis_trace only), so the dispatch
layer may import it without loading the gate's rules and shell analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attrs import frozen

from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Route
from metis_trace import RuleRef
from metis_trace import Stage

if TYPE_CHECKING:
    from metis_trace import DecisionEvent


@frozen
class AskAnswer:
    """How an ask was resolved: `resolver` is user, protocol, headless-default,
    parent or policy (no one could be asked)."""

    approved: bool
    resolver: str


@frozen
class GateDecision:
    """A decision, the stage that made it, the rule it reports and its facts."""

    decision: Decision
    stage: Stage
    rule: RuleRef | None
    facts: Facts
    route: Route
    detail: str = ""  # why, for people (e.g. what made a command opaque)

    def event(self, *, occ: str, seq: int, t: float, causes: Sequence[int] = ()) -> DecisionEvent:
        """This decision as a trace event."""
        from metis_trace import DecisionEvent  # the trace's events: not needed to decide

        return DecisionEvent(
            seq=seq,
            t=t,
            causes=tuple(causes),
            occ=occ,
            decision=self.decision,
            stage=self.stage.value,
            rule=self.rule,
            facts=self.facts,
            route=self.route,
        )


__all__ = ["AskAnswer", "GateDecision"]
