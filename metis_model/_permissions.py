"""Permission resolution: a pure function from abstract facts to a decision.

`specs/permissions.md` states the order. The first stage that applies decides;
the answer carries that stage and the rule that decided, if any.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from metis_trace import AUTHORITY
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Stage
from metis_trace import ToolKind

STAGE_ORDER: tuple[Stage, ...] = tuple(Stage)


@attrs.frozen
class Resolution:
    decision: Decision
    stage: Stage
    rule: RuleRef | None = None


def _strongest(rules: Iterable[RuleRef]) -> RuleRef | None:
    """The rule that speaks for a set: highest source authority, then most recent."""
    best: RuleRef | None = None
    best_key: tuple[int, int] | None = None
    for rule in rules:
        key = (-AUTHORITY.index(rule.source), rule.recency)
        if best_key is None or key > best_key:
            best, best_key = rule, key
    return best


def _ask_or_deny(mode: Mode) -> Decision:
    # dontAsk turns every question into a refusal: it never returns ask.
    return Decision.DENY if mode is Mode.DONT_ASK else Decision.ASK


def _mode_fallback(mode: Mode, kind: ToolKind) -> Decision:
    if mode is Mode.BYPASS or kind in (ToolKind.READ_ONLY, ToolKind.PLAN_CONTROL):
        return Decision.ALLOW
    if mode is Mode.ACCEPT_EDITS and kind is ToolKind.EDIT:
        return Decision.ALLOW
    if mode is Mode.DONT_ASK or mode is Mode.PLAN:
        return Decision.DENY
    return Decision.ASK


def resolve(facts: Facts) -> Resolution:
    """The staged order: transition, plan, deny rules, ask rules, bypass-immune
    checks, allow rules, scope, mode fallback. First applicable stage decides."""
    mode = facts.mode
    if facts.transition:
        return Resolution(Decision.DENY, Stage.TRANSITION)
    if mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
        return Resolution(Decision.DENY, Stage.PLAN)
    deny: list[RuleRef] = []
    ask: list[RuleRef] = []
    allow: list[RuleRef] = []
    for rule in facts.rules:
        behavior = rule.behavior
        (
            deny
            if behavior is RuleBehavior.DENY
            else ask
            if behavior is RuleBehavior.ASK
            else allow
        ).append(rule)
    if deny:
        return Resolution(Decision.DENY, Stage.DENY_RULE, _strongest(deny))
    if ask:
        return Resolution(_ask_or_deny(mode), Stage.ASK_RULE, _strongest(ask))
    if facts.protected or facts.secret:
        return Resolution(_ask_or_deny(mode), Stage.BYPASS_IMMUNE)
    if allow:
        return Resolution(Decision.ALLOW, Stage.ALLOW_RULE, _strongest(allow))
    if not facts.in_scope:
        return Resolution(_ask_or_deny(mode), Stage.SCOPE)
    return Resolution(_mode_fallback(mode, facts.kind), Stage.MODE)


@attrs.frozen
class Settlement:
    """How an ask ends: approved or not, by whom, and whether anyone waited."""

    approved: bool
    resolver: str
    waited: bool


def settle_ask(route: Route, headless_default: Decision, answer: bool | None) -> Settlement:
    """Resolve a pending ask on a route. Headless and background routes never
    wait: they take the configured default at once (PERM-6)."""
    if route in (Route.HEADLESS, Route.BACKGROUND):
        return Settlement(headless_default is Decision.ALLOW, "headless-default", waited=False)
    resolver = {Route.PROTOCOL: "protocol", Route.CHILD: "parent"}.get(route, "user")
    return Settlement(bool(answer), resolver, waited=True)


# Permissiveness of modes: a partial order. `plan` and `dontAsk` are incomparable
# (plan asks where dontAsk denies; dontAsk allows by rule where plan denies), and
# both sit below `default`. Proven pointwise-monotone for `resolve` in proofs/.
_MODE_COVERS: dict[Mode, frozenset[Mode]] = {
    Mode.PLAN: frozenset({Mode.PLAN}),
    Mode.DONT_ASK: frozenset({Mode.DONT_ASK}),
    Mode.DEFAULT: frozenset({Mode.PLAN, Mode.DONT_ASK, Mode.DEFAULT}),
    Mode.ACCEPT_EDITS: frozenset({Mode.PLAN, Mode.DONT_ASK, Mode.DEFAULT, Mode.ACCEPT_EDITS}),
    Mode.BYPASS: frozenset(Mode),
}


def mode_at_most(child: Mode, parent: Mode) -> bool:
    """True when `child` is never more permissive than `parent`."""
    return child in _MODE_COVERS[parent]


DECISION_RANK: dict[Decision, int] = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}
