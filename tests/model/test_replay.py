"""The fast replay in check_trace equals folding the specification's `step`."""

from __future__ import annotations

import random
from unittest import mock

import attrs
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import MUTATORS
from metis_check import SimConfig
from metis_check import _replay_decisions
from metis_check import _replay_effects
from metis_check import break_trace
from metis_check import check_trace
from metis_check import simulate
from metis_check._generate import flat_run
from metis_check._mutate import RICH
from metis_check._wide import WIDE_SHAPES
from metis_check._wide import wide_batch
from metis_model import resolve
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import ToolKind
from metis_trace import dumps_trace
from metis_trace import read_trace


def _verdict(report):  # type: ignore[no-untyped-def]
    v = report.first
    return None if v is None else (v.invariant, v.index, v.message, v.slice, v.state)


@given(seed=st.integers(0, 100_000), rich=st.booleans())
def test_fast_replay_agrees_on_valid_runs(seed: int, rich: bool) -> None:
    header, events = simulate(seed, RICH if rich else SimConfig())
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert _verdict(fast) == _verdict(slow) is None
    assert fast.checks == slow.checks and fast.transitions == slow.transitions


@settings(max_examples=200)
@given(seed=st.integers(0, 100_000), invariant_id=st.sampled_from(sorted(MUTATORS)))
def test_fast_replay_agrees_on_broken_runs(seed: int, invariant_id: str) -> None:
    header, events = simulate(seed, RICH)
    broken = break_trace(events, invariant_id, random.Random(seed))
    if broken is None:
        return
    fast, slow = check_trace(broken, header), check_trace(broken, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.checks == slow.checks and fast.transitions == slow.transitions


@given(
    seed=st.integers(0, 1000),
    cut=st.integers(0, 400),
    kind=st.sampled_from(
        [
            "result",
            "effect_start",
            "effect_end",
            "decision",
            "ask_resolved",
            "results_sent",
            "repair",
        ]
    ),
)
def test_fast_replay_agrees_when_any_event_is_dropped(seed: int, cut: int, kind: str) -> None:
    header, events = simulate(seed, RICH)
    drop = [e.seq for e in events if e.kind == kind]
    if not drop:
        return
    gone = drop[cut % len(drop)]
    mangled = [
        e.model_copy(update={"seq": i}) for i, e in enumerate(e for e in events if e.seq != gone)
    ]
    fast, slow = check_trace(mangled, header), check_trace(mangled, header, reference=True)
    assert _verdict(fast) == _verdict(slow)


# -- the fast paths: the decision memo and the schedule of a wide batch ------


@settings(max_examples=200)
@given(
    seed=st.integers(0, 100_000),
    invariant_id=st.sampled_from(sorted(MUTATORS)),
    width=st.sampled_from([6, 30]),
)
def test_schedule_counters_agree_on_every_batch(seed: int, invariant_id: str, width: int) -> None:
    # `_NARROW = 0`: every batch, however narrow, goes through `_Schedule`;
    # `_PROBLEMS_KEPT = 1`: the decision memo is cleared at every new verdict.
    header, events = simulate(seed, attrs.evolve(RICH, max_batch=width))
    broken = break_trace(events, invariant_id, random.Random(seed)) or events
    with (
        mock.patch.object(_replay_effects, "_NARROW", 0),
        mock.patch.object(_replay_decisions, "_PROBLEMS_KEPT", 1),
    ):
        fast = check_trace(broken, header)
    slow = check_trace(broken, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.checks == slow.checks and fast.transitions == slow.transitions


@settings(max_examples=50)
@given(seed=st.integers(0, 100_000), invariant_id=st.sampled_from(sorted(MUTATORS)))
def test_fast_replay_agrees_on_traces_read_back(seed: int, invariant_id: str) -> None:
    # Read back, every decision has its own `Facts`, equal by value to others:
    # the memo is keyed by value.
    header, events = simulate(seed, RICH)
    broken = break_trace(events, invariant_id, random.Random(seed)) or events
    header, events = read_trace(dumps_trace(header, broken).splitlines())
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.checks == slow.checks


def test_a_call_waiting_on_its_ask_is_not_admitted() -> None:
    # `_Call.admitted` is a field here: set by the decision, then by the answer.
    header, events = flat_run(2)
    d = next(e for e in events if isinstance(e, DecisionEvent))
    facts = d.facts.model_copy(update={"kind": ToolKind.EXEC})
    asked = resolve(facts)
    assert asked.decision is Decision.ASK
    events[d.seq] = d.model_copy(
        update={"facts": facts, "decision": asked.decision, "stage": asked.stage.value}
    )
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.first is not None and fast.first.invariant == "AUTH-1"


def test_unhashable_facts_are_checked_without_the_memo() -> None:
    header, events = flat_run(3)
    unhashable = []
    for e in events:
        if isinstance(e, DecisionEvent):  # rules as a list: not a validated event
            e = e.model_copy(update={"facts": e.facts.model_copy(update={"rules": []})})
        unhashable.append(e)
    last = max(e.seq for e in unhashable if e.kind == "decision")
    unhashable[last] = unhashable[last].model_copy(update={"stage": "allow_rule"})
    fast, slow = check_trace(unhashable, header), check_trace(unhashable, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.first is not None and fast.first.invariant == "PERM-1"


SHAPES = WIDE_SHAPES


@pytest.mark.parametrize("shape", SHAPES)
def test_a_wide_batch_agrees_with_the_specification(shape: str) -> None:
    header, events = wide_batch(60, shape)
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.checks == slow.checks and fast.transitions == slow.transitions
    assert (fast.first and fast.first.invariant) == SHAPES[shape]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_batch_of_2000_calls_is_checked_in_linear_time(shape: str) -> None:
    # Not a timing test: the O(b) `interference` scan runs only when the
    # schedule's counters say a rule is broken, that is once, at the divergence.
    header, events = wide_batch(2000, shape)
    with mock.patch.object(
        _replay_effects, "interference", wraps=_replay_effects.interference
    ) as scan:
        wide = check_trace(events, header)
    header, events = wide_batch(60, shape)
    narrow = check_trace(events, header, reference=True)
    assert (wide.first and wide.first.invariant) == (narrow.first and narrow.first.invariant)
    assert scan.call_count == (0 if wide.ok else 1)
