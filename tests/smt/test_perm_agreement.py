"""The z3 permission encodings agree with the Python model on concrete inputs."""

from __future__ import annotations

import itertools

import z3
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_model import child_authority
from metis_model import mode_at_most
from metis_model import resolve
from metis_model import settle_ask
from metis_model._children import ChildAuthority
from metis_proofs import child_mode_z3
from metis_proofs import concrete_resolution
from metis_proofs import concrete_settlement
from metis_proofs._perm import DECISION
from metis_proofs._perm import MODE
from metis_proofs._perm import STAGE
from metis_proofs._perm import SymFacts
from metis_proofs._perm import mode_at_most_z3
from metis_proofs._perm import resolve_z3
from metis_proofs._perm import rule_index
from metis_proofs._rule_cutoff import UnboundedRules
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from tests.model._facts import facts_of
from tests.model._facts import rule_free_facts
from tests.model._facts import rule_refs

rules = rule_refs(
    st.sampled_from(["Bash(git:*)", "Read(./.env)", "Edit(src/**)"]),
    st.integers(-2, 4),  # small range: ties within a source are common
)
facts = facts_of(rules, 6)


@given(facts)
def test_z3_resolve_equals_python_resolve(f: Facts) -> None:
    expected = resolve(f)
    assert concrete_resolution(f) == (
        expected.decision,
        expected.stage,
        rule_index(f.rules, expected.rule),
    )


def test_z3_resolve_on_every_rule_free_fact() -> None:
    for f in rule_free_facts():
        r = resolve(f)
        assert concrete_resolution(f) == (r.decision, r.stage, -1), f


def test_z3_settle_equals_settle_ask_everywhere() -> None:
    for route, default, answer in itertools.product(Route, Decision, (False, True)):
        s = settle_ask(route, default, answer)
        assert concrete_settlement(route, default, answer) == (s.approved, s.waited)


def test_z3_child_mode_equals_child_authority_everywhere() -> None:
    import z3

    for parent, requested in itertools.product(Mode, [None, *Mode]):
        got = child_authority(parent, ["read"], requested)
        mode, refused = child_mode_z3(
            MODE[parent], MODE[requested or Mode.DEFAULT], z3.BoolVal(requested is None)
        )
        assert z3.is_true(z3.simplify(refused)) == (not isinstance(got, ChildAuthority))
        if isinstance(got, ChildAuthority):
            assert MODE.decode(z3.simplify(mode)) is got.mode


def test_mode_order_table_is_the_python_one() -> None:
    import z3

    for a, b in itertools.product(Mode, Mode):
        assert z3.is_true(z3.simplify(mode_at_most_z3(MODE[a], MODE[b]))) == mode_at_most(a, b)


@settings(max_examples=40, deadline=None)
@given(facts)
def test_the_unbounded_rule_encoding_is_resolve(f: Facts) -> None:
    """`_rule_cutoff.UnboundedRules` (rules as functions over the naturals),
    its functions fixed to a concrete list, forces exactly `resolve`'s
    decision, stage and speaking rule."""
    big = UnboundedRules("u.")
    res = resolve_z3(SymFacts.of(f), big)
    fixed = [big.n == len(f.rules)]
    for i, r in enumerate(SymFacts.of(f).rules):
        b = big.at(z3.IntVal(i))
        fixed += [b.present, b.behavior == r.behavior, b.source == r.source, b.recency == r.recency]
    expected = resolve(f)
    solver = z3.Solver()
    solver.add(*fixed, *big.axioms)
    want = z3.And(
        res.decision == DECISION[expected.decision],
        res.stage == STAGE[expected.stage],
        res.rule == rule_index(f.rules, expected.rule),
    )
    assert solver.check(want) == z3.sat
    assert solver.check(z3.Not(want)) == z3.unsat
