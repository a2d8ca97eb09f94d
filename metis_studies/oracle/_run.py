"""Running the oracle: Hypothesis examples per route, tallied."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import example
from hypothesis import given
from hypothesis import settings

from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

from ._cases import Call
from ._cases import Case
from ._cases import ChildDraw
from ._cases import RuleDraw
from ._cases import cases
from ._check import CaseOutcome
from ._check import check_case
from ._shells import ATOMS
from ._shells import ECHO_DYN
from ._shells import line
from ._world import ROUTES
from ._world import RULES
from ._world import World
from ._world import build_world


@attrs.define
class Tally:
    """Calls decided and calls that passed every check, plus asks settled."""

    cases: int = 0
    agreements: int = 0
    asks: int = 0
    failures: list[str] = attrs.field(factory=list)
    decisions: Counter[str] = attrs.field(factory=Counter)

    def add(self, outcome: CaseOutcome) -> None:
        self.cases += len(outcome.checks)
        self.asks += sum(c.asked for c in outcome.checks)
        self.decisions.update(c.decision for c in outcome.checks)
        if outcome.problems:  # a wrong clone spoils every call of the case
            self.failures.append(outcome.describe())
            return
        self.agreements += sum(c.agrees for c in outcome.checks)
        if not outcome.ok:
            self.failures.append(outcome.describe())


def run_route(world: World, route: Route, examples: int, *, derandomize: bool = True) -> Tally:
    """`examples` Hypothesis examples on one route; never raises on a mismatch."""
    tally = Tally()

    @settings(
        max_examples=examples,
        database=None,
        derandomize=derandomize,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @example(substituted_list_case(route))  # bashlex once missed `rm` here (PERM-2)
    @given(cases(route))
    def one(case: Case) -> None:
        tally.add(check_case(world, case))

    one()
    return tally


def substituted_list_case(route: Route) -> Case:
    """`rm` under a deny rule, in `$( a && b )`: the bashlex parser could not
    read the list, recorded no deny rule, and an approved ask ran `rm`."""
    rm = next(a for a in ATOMS if a.text == "rm -rf build")
    ls = next(a for a in ATOMS if a.text == "ls src")
    shell = line("echo $( rm -rf build && ls src )", rm, ls, ECHO_DYN)
    deny = RuleDraw(
        Source.PROJECT, RuleBehavior.DENY, next(r for r in RULES if r.text == "Bash(rm:*)")
    )
    child = ChildDraw(Route.INTERACTIVE, Mode.DEFAULT, None, ()) if route is Route.CHILD else None
    call = Call("bash", shell=shell)
    return Case(route, Mode.DEFAULT, (deny,), (call,), (True,) * 4, Decision.DENY, False, child)


@attrs.frozen
class RouteResult:
    """One route's oracle run: calls decided, calls on which gate, facts,
    model and settlement all agreed, asks settled, the gate's decisions by
    kind, and each disagreement described."""

    route: Route
    calls: int
    agreements: int
    asks: int
    decisions: tuple[tuple[str, int], ...]
    failures: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.calls > 0 and self.agreements == self.calls

    def to_json(self) -> dict[str, Any]:
        return {
            "route": self.route.value,
            "calls": self.calls,
            "agreements": self.agreements,
            "asks": self.asks,
            "decisions": dict(self.decisions),
            "failures": list(self.failures),
            "ok": self.ok,
        }


def oracle_study(examples_per_route: int = 100) -> tuple[RouteResult, ...]:
    """Every route, `examples_per_route` Hypothesis examples each (derandomized);
    the substituted-list case is always tried."""
    with tempfile.TemporaryDirectory(prefix="metis-oracle-") as tmp:
        world = build_world(Path(tmp))
        out = []
        for route in ROUTES:
            t = run_route(world, route, examples_per_route)
            decisions = tuple(sorted(t.decisions.items()))
            out.append(
                RouteResult(route, t.cases, t.agreements, t.asks, decisions, tuple(t.failures))
            )
        return tuple(out)


def run_oracle(examples_per_route: int = 100) -> dict[Route, tuple[int, int]]:
    """Per route: (calls decided, calls that agreed); equal when everything holds."""
    return {r.route: (r.calls, r.agreements) for r in oracle_study(examples_per_route)}
