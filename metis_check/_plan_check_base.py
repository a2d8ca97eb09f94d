"""The turn-log checker's state and how it reports (`_CheckerBase`).

What the checker of one turn keeps as it reads the records (the catalog, the
current framework attempt, the execution state, pauses, approvals, the steps),
how a check counts and a disagreement becomes a violation, and how each step
of the execution state (`observe`, `bad`) is checked for PLAN-4/5/6. The
record checks build on it (`_plan_check_framework.py`, `_plan_check_gate.py`,
`_plan_check_steps.py`, `_plan_check.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs

from metis_model.plan._exec import Act
from metis_model.plan._exec import ExecState
from metis_model.plan._exec import bad
from metis_model.plan._exec import observe
from metis_trace import Action
from metis_trace import ExecutorInfo
from metis_trace import FrameworkRecord
from metis_trace import PathRecord
from metis_trace import PauseRecord
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnHeader

from ._report import Violation

__all__ = ["PLAN_CHECKS", "Traces"]


PLAN_CHECKS = tuple(f"PLAN-{n}" for n in range(1, 15))
Traces = Mapping[int, tuple[TraceHeader, Sequence[TraceEvent]]]
_RAN = (StepStatus.OK, StepStatus.ERROR)
_FINISHED = (StepStatus.OK, StepStatus.SKIPPED_EMPTY, StepStatus.SKIPPED_CONDITION)


@attrs.define
class _Attempt:
    framework: FrameworkRecord
    outputs: dict[int, Any] = attrs.field(factory=dict)
    origins: dict[int, str] = attrs.field(factory=dict)
    status: dict[int, StepStatus] = attrs.field(factory=dict)
    committed: set[int] = attrs.field(factory=set)
    hit: PathRecord | None = None


class _CheckerBase:
    """What the checker of one turn keeps, and how it reports."""

    def __init__(
        self,
        header: TurnHeader,
        source: str,
        line_of: Sequence[int] | None,
        traces: Traces | None,
    ) -> None:
        self.h = header
        self.source = source
        self.line_of = line_of
        self.traces = traces
        self.violations: list[Violation] = []
        self.checks: Counter[str] = Counter()
        self.catalog: dict[str, ExecutorInfo] = {}
        self.segment = 1
        self.attempt: _Attempt | None = None
        self.exec: ExecState | None = None
        self.reported_bad: set[str] = set()
        self.hits: list[PathRecord] = []
        self.pauses: dict[str, PauseRecord] = {}
        self.granted: dict[str, Action] = {}
        self.used: set[str] = set()
        self.inputs: dict[str, str] = {}
        self.recoveries = 0
        self.steps: list[StepRecord] = []
        self.occs: dict[int, set[str]] = {}
        self.index = 0

    def fail(self, inv: str, message: str) -> None:
        line = self.line_of[self.index] if self.line_of is not None else None
        self.violations.append(Violation(inv, self.index, message, line=line))

    def expect(self, inv: str, ok: bool, message: str) -> None:
        self.checks[inv] += 1
        if not ok:
            self.fail(inv, message)

    def advance(self, act: Act) -> None:
        if self.exec is None:
            return
        self.exec = observe(self.exec, act)
        for inv in PLAN_CHECKS:
            if inv in ("PLAN-4", "PLAN-5", "PLAN-6"):
                self.checks[inv] += 1
        for inv in bad(self.exec):
            if inv not in self.reported_bad:
                self.reported_bad.add(inv)
                self.fail(inv, _BAD_MESSAGE[inv])


REDACTED = "[REDACTED]"


def _redacted(value: Any) -> bool:
    """Whether the log redacted a credential somewhere in `value`."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, dict):
        return any(_redacted(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_redacted(v) for v in value)
    return False


_BAD_MESSAGE = {
    "PLAN-4": "recovery after an effect committed, or a second recovery",
    "PLAN-5": "an operational failure recovered by another plan",
    "PLAN-6": "a committed mutation ran again",
}
