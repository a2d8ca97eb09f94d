"""The staged permission order (specs/permissions.md), by example and by property."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_model import DECISION_RANK
from metis_model import mode_at_most
from metis_model import resolve
from metis_model import settle_ask
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind
from tests.model._facts import facts_of
from tests.model._facts import rule_refs

rules_st = rule_refs(st.just("R"), st.integers(0, 5))
facts_st = facts_of(rules_st, 3)


def rule(behavior: RuleBehavior, source: Source = Source.PROJECT, recency: int = 0) -> RuleRef:
    return RuleRef(
        behavior=behavior,
        source=source,
        pattern=f"{behavior.value}-{source.value}",
        recency=recency,
    )


@pytest.mark.parametrize(
    ("facts", "decision", "stage"),
    [
        (Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY), Decision.ALLOW, Stage.MODE),
        (Facts(mode=Mode.DEFAULT, kind=ToolKind.EDIT), Decision.ASK, Stage.MODE),
        (Facts(mode=Mode.ACCEPT_EDITS, kind=ToolKind.EDIT), Decision.ALLOW, Stage.MODE),
        (Facts(mode=Mode.ACCEPT_EDITS, kind=ToolKind.EXEC), Decision.ASK, Stage.MODE),
        (Facts(mode=Mode.DONT_ASK, kind=ToolKind.EXEC), Decision.DENY, Stage.MODE),
        (Facts(mode=Mode.BYPASS, kind=ToolKind.EXEC), Decision.ALLOW, Stage.MODE),
        (Facts(mode=Mode.PLAN, kind=ToolKind.EDIT), Decision.DENY, Stage.PLAN),
        (Facts(mode=Mode.PLAN, kind=ToolKind.PLAN_CONTROL), Decision.ALLOW, Stage.MODE),
        (
            Facts(mode=Mode.BYPASS, kind=ToolKind.EDIT, protected=True),
            Decision.ASK,
            Stage.BYPASS_IMMUNE,
        ),
        (
            Facts(mode=Mode.DONT_ASK, kind=ToolKind.READ_ONLY, secret=True),
            Decision.DENY,
            Stage.BYPASS_IMMUNE,
        ),
        (
            Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY, in_scope=False),
            Decision.ASK,
            Stage.SCOPE,
        ),
        (
            Facts(mode=Mode.BYPASS, kind=ToolKind.READ_ONLY, transition=True),
            Decision.DENY,
            Stage.TRANSITION,
        ),
        (
            Facts(mode=Mode.DEFAULT, kind=ToolKind.EXEC, rules=(rule(RuleBehavior.ALLOW),)),
            Decision.ALLOW,
            Stage.ALLOW_RULE,
        ),
        (
            Facts(mode=Mode.DONT_ASK, kind=ToolKind.EXEC, rules=(rule(RuleBehavior.ASK),)),
            Decision.DENY,
            Stage.ASK_RULE,
        ),
        # An allow rule does not lift a bypass-immune check, nor an out-of-scope path past allow.
        (
            Facts(
                mode=Mode.DEFAULT,
                kind=ToolKind.EDIT,
                protected=True,
                rules=(rule(RuleBehavior.ALLOW),),
            ),
            Decision.ASK,
            Stage.BYPASS_IMMUNE,
        ),
        (
            Facts(
                mode=Mode.DEFAULT,
                kind=ToolKind.EDIT,
                in_scope=False,
                rules=(rule(RuleBehavior.ALLOW),),
            ),
            Decision.ALLOW,
            Stage.ALLOW_RULE,
        ),
    ],
)
def test_staged_order_examples(facts: Facts, decision: Decision, stage: Stage) -> None:
    got = resolve(facts)
    assert (got.decision, got.stage) == (decision, stage)


def test_deny_outranks_a_policy_allow_and_names_the_strongest_deny() -> None:
    facts = Facts(
        mode=Mode.BYPASS,
        kind=ToolKind.EXEC,
        rules=(
            rule(RuleBehavior.ALLOW, Source.POLICY, 9),
            rule(RuleBehavior.DENY, Source.PERSISTED, 1),
            rule(RuleBehavior.DENY, Source.CLI, 0),
            rule(RuleBehavior.DENY, Source.CLI, 3),
        ),
    )
    got = resolve(facts)
    assert got.decision is Decision.DENY and got.stage is Stage.DENY_RULE
    assert got.rule == rule(RuleBehavior.DENY, Source.CLI, 3)


@given(facts_st)
def test_perm2_deny_dominates(facts: Facts) -> None:
    if any(r.behavior is RuleBehavior.DENY for r in facts.rules):
        assert resolve(facts).decision is Decision.DENY


@given(facts_st)
def test_perm3_bypass_immune_in_every_mode(facts: Facts) -> None:
    if facts.protected or facts.secret:
        assert resolve(facts).decision is not Decision.ALLOW


@given(facts_st)
def test_perm4_plan_admits_no_mutating_effect(facts: Facts) -> None:
    if facts.mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
        assert resolve(facts).decision is Decision.DENY


@given(facts_st)
def test_perm5_dont_ask_never_asks(facts: Facts) -> None:
    if facts.mode is Mode.DONT_ASK:
        assert resolve(facts).decision is not Decision.ASK


@given(st.sampled_from(Route), st.sampled_from(Decision), st.none() | st.booleans())
def test_perm6_headless_never_waits(route: Route, default: Decision, answer: bool | None) -> None:
    settled = settle_ask(route, default, answer)
    if route in (Route.HEADLESS, Route.BACKGROUND):
        assert not settled.waited
        assert settled.approved is (default is Decision.ALLOW)
        assert settled.resolver == "headless-default"
    else:
        assert settled.waited


@given(facts_st)
def test_perm1_a_decision_is_a_function_of_the_facts_and_names_its_rule(facts: Facts) -> None:
    got = resolve(facts)
    assert resolve(facts) == got
    rule_stages = {Stage.DENY_RULE, Stage.ASK_RULE, Stage.ALLOW_RULE}
    assert (got.rule is not None) == (got.stage in rule_stages)
    if got.rule is not None:
        assert got.rule in facts.rules


@given(facts_st, st.sampled_from(Mode), st.sampled_from(Mode))
def test_child2_resolution_is_monotone_in_the_mode_order(
    facts: Facts, child: Mode, parent: Mode
) -> None:
    if mode_at_most(child, parent):
        as_child = resolve(facts.model_copy(update={"mode": child}))
        as_parent = resolve(facts.model_copy(update={"mode": parent}))
        assert DECISION_RANK[as_child.decision] <= DECISION_RANK[as_parent.decision]


@given(facts_st, rules_st)
def test_child2_adding_a_deny_or_ask_rule_never_loosens(facts: Facts, extra: RuleRef) -> None:
    if extra.behavior is RuleBehavior.ALLOW:
        return
    before = resolve(facts)
    after = resolve(facts.model_copy(update={"rules": (*facts.rules, extra)}))
    assert DECISION_RANK[after.decision] <= DECISION_RANK[before.decision]


def test_mode_order_is_a_partial_order_with_plan_and_dont_ask_incomparable() -> None:
    modes = list(Mode)
    for a in modes:
        assert mode_at_most(a, a)
        for b, c in itertools.product(modes, modes):
            if mode_at_most(a, b) and mode_at_most(b, c):
                assert mode_at_most(a, c)
        for b in modes:
            if a is not b and mode_at_most(a, b):
                assert not mode_at_most(b, a)
    assert not mode_at_most(Mode.PLAN, Mode.DONT_ASK)
    assert not mode_at_most(Mode.DONT_ASK, Mode.PLAN)
    assert not mode_at_most(Mode.ACCEPT_EDITS, Mode.DEFAULT)
    assert mode_at_most(Mode.DEFAULT, Mode.BYPASS)
