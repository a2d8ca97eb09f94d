"""The turn model: simulated turn logs conform, broken ones are caught by ID,
and the execution protocol never reaches a bad state (stateful)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import invariant
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from metis_check import PLAN_CHECKS
from metis_check import check_turn_log
from metis_check import check_turn_logs
from metis_check._plan_generate import simulate_turn
from metis_check._plan_mutate import PLAN_MUTATORS
from metis_check._plan_mutate import break_turn
from metis_check._plan_mutate import broken_turn
from metis_model import INVARIANTS
from metis_model.plan import EXEC_ABLATIONS
from metis_model.plan import Act
from metis_model.plan import ActKind
from metis_model.plan import Outcome
from metis_model.plan import bad
from metis_model.plan import enabled
from metis_model.plan import initial_exec
from metis_model.plan import protocol_step
from metis_trace import dumps_turn_log
from metis_trace import read_turn_log

PLAN_IDS = [inv.id for inv in INVARIANTS if inv.family == "PLAN"]


def test_every_plan_invariant_has_a_check_and_a_mutator() -> None:
    assert PLAN_IDS == list(PLAN_CHECKS) == list(PLAN_MUTATORS)


@given(seed=st.integers(0, 100_000))
def test_simulated_turns_conform(seed: int) -> None:
    turn = simulate_turn(seed)
    report = check_turn_log(turn.header, turn.records)
    assert report.ok, report.first


def test_simulated_turns_exercise_every_id() -> None:
    checked: set[str] = set()
    for seed in range(200):
        turn = simulate_turn(seed)
        checked |= {k for k, n in check_turn_log(turn.header, turn.records).checks.items() if n}
    assert set(PLAN_IDS) <= checked


@pytest.mark.parametrize("invariant_id", PLAN_IDS)
@settings(max_examples=15)
@given(seed=st.integers(0, 5_000))
def test_broken_turns_are_rejected_with_their_id(invariant_id: str, seed: int) -> None:
    broken = break_turn(simulate_turn(seed), invariant_id, random.Random(seed))
    if broken is None:
        broken = broken_turn(invariant_id, seed)
    header, records = broken
    report = check_turn_log(header, records)
    assert report.first is not None and report.first.invariant == invariant_id, report.first


def test_a_turn_log_round_trips_and_violations_name_the_line() -> None:
    header, records = broken_turn("PLAN-11")
    text = dumps_turn_log(header, records)
    h2, r2, lines = read_turn_log(text.splitlines())
    assert (h2, r2) == (header, list(records))
    first = check_turn_log(h2, r2, line_of=lines).first
    assert first is not None and first.line == len(text.splitlines())  # the final record


def test_turn_ids_must_be_new_across_turn_logs() -> None:
    a, b = simulate_turn(1), simulate_turn(2)
    twin = b.header.model_copy(update={"turn_id": a.header.turn_id})
    assert check_turn_logs({"a": (a.header, a.records), "b": (b.header, b.records)}).ok
    report = check_turn_logs({"a": (a.header, a.records), "b": (twin, b.records)})
    assert report.first is not None and report.first.invariant == "PLAN-10"


# --- the execution protocol, stateful ------------------------------------------------

OUTCOMES = list(Outcome)


class Protocol(RuleBasedStateMachine):
    """Random allowed actions of the runtime's protocol: no bad state is reachable
    (PLAN-4, PLAN-5, PLAN-6), and every enabled action is taken as the protocol says."""

    def __init__(self) -> None:
        super().__init__()
        self.state = initial_exec([False, True, True])

    @rule(slot=st.integers(0, 2), outcome=st.sampled_from(OUTCOMES), commit=st.booleans())
    def run(self, slot: int, outcome: Outcome, commit: bool) -> None:
        self._do(Act(ActKind.RUN, slot, outcome, commit))

    @rule(kind=st.sampled_from([ActKind.PAUSE, ActKind.RESUME, ActKind.RECOVER, ActKind.END]))
    def other(self, kind: ActKind) -> None:
        self._do(Act(kind))

    def _do(self, act: Act) -> None:
        nxt = protocol_step(self.state, act)
        assert (nxt is None) == (not enabled(self.state, act))
        if nxt is not None:
            self.state = nxt

    @invariant()
    def never_bad(self) -> None:
        assert bad(self.state) == ()

    @precondition(lambda self: self.state.recoveries > 0)
    @invariant()
    def recovered_only_without_commits(self) -> None:
        assert not self.state.recovered_after_commit


TestProtocol = Protocol.TestCase


@pytest.mark.parametrize("ablation", list(EXEC_ABLATIONS))
def test_each_ablation_reaches_its_bad_state(ablation: str) -> None:
    """A breadth-first search over the ablated protocol finds the ID broken."""
    ablations = frozenset({ablation})
    frontier = [initial_exec([True, False])]
    seen = set(frontier)
    acts = [Act(ActKind.RUN, s, o, c) for s in (0, 1) for o in Outcome for c in (False, True)]
    acts += [Act(k) for k in (ActKind.PAUSE, ActKind.RESUME, ActKind.RECOVER, ActKind.END)]
    for _ in range(8):
        nxt = []
        for state in frontier:
            for act in acts:
                after = protocol_step(state, act, ablations)
                if after is None or after in seen:
                    continue
                if EXEC_ABLATIONS[ablation] in bad(after):
                    return
                seen.add(after)
                nxt.append(after)
        frontier = nxt
    pytest.fail(f"{ablation} never reaches {EXEC_ABLATIONS[ablation]}")
