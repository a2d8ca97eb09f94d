"""Coverage: how often traces exercised each invariant ID and model transition.

`Coverage` adds up reports (`Report.checks`: the checks that had something to
check, `metis_model.exercised`; `Report.transitions`: the (phase, kind)
transitions taken) and says what was never reached. The pytest plugin and
`metis conform --coverage` use it; what "exercised" means per ID is in
specs/trace-format.md ("Coverage").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from metis_model._invariants import INVARIANTS
from metis_model._loop_state import ENABLED

from ._report import Report

__all__ = ["TRANSITIONS", "Coverage"]

TRANSITIONS: tuple[str, ...] = tuple(
    sorted(f"{phase.value}--{kind}" for phase, kinds in ENABLED.items() for kind in kinds)
)
"""Every model transition, named `<phase>--<event kind>` as reports name them."""


class Coverage:
    """Counts added up over reports (and over other `Coverage` dumps)."""

    def __init__(self) -> None:
        self.reports = 0
        self.checks: Counter[str] = Counter()
        self.transitions: Counter[str] = Counter()

    def add(self, report: Report) -> None:
        self.reports += 1
        self.checks.update(report.checks)
        self.transitions.update(report.transitions)

    def add_all(self, reports: Iterable[Report]) -> None:
        for r in reports:
            self.add(r)

    def dump(self) -> dict[str, Any]:
        return {
            "reports": self.reports,
            "checks": dict(self.checks),
            "transitions": dict(self.transitions),
        }

    def merge(self, data: Mapping[str, Any]) -> None:
        self.reports += int(data.get("reports", 0))
        self.checks.update(data.get("checks", {}))
        self.transitions.update(data.get("transitions", {}))

    def never_checked(self, ids: Iterable[str] | None = None) -> list[str]:
        wanted = [i.id for i in INVARIANTS] if ids is None else list(ids)
        return [i for i in wanted if not self.checks.get(i)]

    def never_taken(self) -> list[str]:
        return [t for t in TRANSITIONS if not self.transitions.get(t)]

    def summary(self) -> dict[str, Any]:
        return {
            "reports": self.reports,
            "invariants": {inv.id: self.checks.get(inv.id, 0) for inv in INVARIANTS},
            "never_checked": self.never_checked(),
            "transitions": {t: self.transitions.get(t, 0) for t in TRANSITIONS},
            "never_taken": self.never_taken(),
        }
