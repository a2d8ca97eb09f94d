"""The PERM claims and CHILD-2, as z3 formulas over symbolic facts.

Each claim is about `resolve_z3` / `settle_z3` / `child_mode_z3` over
`PERM_RULE_SLOTS` symbolic rules (enough for every behaviour and a tie):
`_properties.prove_claim` proves it by the unsat of its negation, so it holds
for every input.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from types import MappingProxyType

import attrs
import z3

from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior

from ._perm import DECISION
from ._perm import KIND
from ._perm import MODE
from ._perm import ROUTE
from ._perm import STAGE
from ._perm import SymFacts
from ._perm import child_mode_z3
from ._perm import decision_rank
from ._perm import has
from ._perm import mode_at_most_z3
from ._perm import resolve_z3
from ._perm import settle_z3
from ._perm import stage_decides
from ._rules import BEHAVIOR
from ._rules import SymRule
from ._rules import authority_rank
from ._sorts import ands
from ._system_config import LoopConfig

__all__ = ["CHILD_EXTRA_SLOTS", "PERM_CLAIMS", "PERM_RULE_SLOTS"]


PERM_RULE_SLOTS = len(RuleBehavior) + 1  # every behaviour set, plus a same-behaviour tie
CHILD_EXTRA_SLOTS = 2


def _perm_1(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    decides = stage_decides(f)
    res = resolve_z3(f)
    exactly_one = z3.Sum([z3.If(d, 1, 0) for _, d in decides]) == 1
    reports_it = ands([z3.Implies(d, res.stage == STAGE[s]) for s, d in decides])
    return z3.And(exactly_one, reports_it)


def _perm_2(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    deny, allow = BEHAVIOR[RuleBehavior.DENY], BEHAVIOR[RuleBehavior.ALLOW]
    # The brief's form: a deny beats an allow of lower or equal authority...
    pairwise = [
        z3.Implies(
            z3.And(
                a.present,
                a.behavior == deny,
                b.present,
                b.behavior == allow,
                authority_rank(a.source) <= authority_rank(b.source),
            ),
            res.decision != DECISION[Decision.ALLOW],
        )
        for a in f.rules
        for b in f.rules
        if a is not b
    ]
    # ...and the invariant's stronger form: any matching deny rule means deny.
    strong = z3.Implies(has(f, RuleBehavior.DENY), res.decision == DECISION[Decision.DENY])
    return z3.And(strong, *pairwise)


def _perm_3(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    return z3.Implies(z3.Or(f.protected, f.secret), res.decision != DECISION[Decision.ALLOW])


def _perm_4(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    mutating = KIND.is_in(f.kind, MUTATING_KINDS)
    return z3.Implies(
        z3.And(f.mode == MODE[Mode.PLAN], mutating), res.decision == DECISION[Decision.DENY]
    )


def _perm_5(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    return z3.Implies(f.mode == MODE[Mode.DONT_ASK], res.decision != DECISION[Decision.ASK])


def _perm_6(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    route, hdef, answer = ROUTE.const("route"), DECISION.const("hdef"), z3.Bool("answer")
    settled = settle_z3(route, hdef, answer)
    headless = z3.Or(route == ROUTE[Route.HEADLESS], route == ROUTE[Route.BACKGROUND])
    pending = z3.And(res.decision == DECISION[Decision.ASK], settled.waited)
    return z3.Implies(
        headless,
        z3.And(
            z3.Not(pending),
            settled.by_default,
            settled.approved == (hdef == DECISION[Decision.ALLOW]),
        ),
    )


def _child_2(config: LoopConfig) -> z3.BoolRef:
    parent = SymFacts.fresh("parent.", PERM_RULE_SLOTS)
    keep = [z3.Bool(f"keep{i}") for i in range(PERM_RULE_SLOTS)]
    allow = BEHAVIOR[RuleBehavior.ALLOW]
    kept = tuple(
        SymRule(
            z3.And(r.present, z3.Or(r.behavior != allow, keep[i])),
            r.behavior,
            r.source,
            r.recency,
        )
        for i, r in enumerate(parent.rules)
    )
    extra = SymFacts.fresh("added.", CHILD_EXTRA_SLOTS).rules
    child_mode = MODE.const("child.mode")
    child = attrs.evolve(parent, mode=child_mode, rules=kept + extra)
    added_ok = ands([z3.Implies(r.present, r.behavior != allow) for r in extra])
    narrower = z3.And(mode_at_most_z3(child_mode, parent.mode), added_ok)
    monotone = z3.Implies(
        narrower,
        decision_rank(resolve_z3(child).decision) <= decision_rank(resolve_z3(parent).decision),
    )
    # The clone itself: a spawned child's mode is at most its parent's.
    pm, req, none = MODE.const("spawn.parent"), MODE.const("spawn.requested"), z3.Bool("spawn.none")
    cm, refused = child_mode_z3(pm, req, none, cloned=not config.ablated("child-gate-not-cloned"))
    cloned = z3.Implies(z3.Not(refused), mode_at_most_z3(cm, pm))
    # `mode_at_most` is a partial order (reflexive, antisymmetric, transitive).
    a, b, c = MODE.const("order.a"), MODE.const("order.b"), MODE.const("order.c")
    le = mode_at_most_z3
    order = z3.And(
        le(a, a),
        z3.Implies(z3.And(le(a, b), le(b, a)), a == b),
        z3.Implies(z3.And(le(a, b), le(b, c)), le(a, c)),
    )
    return z3.And(monotone, cloned, order)


PERM_CLAIMS: Mapping[str, Callable[[LoopConfig], z3.BoolRef]] = MappingProxyType(
    {
        "PERM-1": _perm_1,
        "PERM-2": _perm_2,
        "PERM-3": _perm_3,
        "PERM-4": _perm_4,
        "PERM-5": _perm_5,
        "PERM-6": _perm_6,
        "CHILD-2": _child_2,
    }
)
