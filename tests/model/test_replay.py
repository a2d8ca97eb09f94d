"""The fast replay in check_trace equals folding the specification's `step`."""

from __future__ import annotations

import random
from typing import Any
from unittest import mock

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metis_check import MUTATORS, SimConfig, _replay, break_trace, check_trace, simulate
from metis_check._generate import flat_run
from metis_check._mutate import RICH
from metis_model import resolve
from metis_trace import (
    Assistant,
    CallClass,
    CallRef,
    Cancel,
    CancelCause,
    Decision,
    DecisionEvent,
    EffectEnd,
    EffectOutcome,
    EffectStart,
    Facts,
    Mode,
    Request,
    Result,
    ResultsSent,
    ResultStatus,
    RuleBehavior,
    RuleRef,
    RunEnd,
    RunStatus,
    Source,
    StopRequest,
    ToolKind,
    TraceEvent,
    TraceHeader,
    TurnStart,
    dumps_trace,
    read_trace,
)


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
    with mock.patch.object(_replay, "_NARROW", 0), mock.patch.object(_replay, "_PROBLEMS_KEPT", 1):
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


# Shapes of one wide batch: the invariant each breaks first (None: valid).
SHAPES: dict[str, str | None] = {
    "scheduled": None,
    "one skipped": None,  # closed without running: it holds nothing back
    "exclusive among safe": "SCHED-1",
    "queue overlaps": "SCHED-2",
    "queue overtaken": "SCHED-2",
    "exclusive too early": "SCHED-3",
}


def _one_batch(width: int, shape: str) -> tuple[TraceHeader, list[TraceEvent]]:
    """A run with one batch of `width` calls, scheduled by their class: every
    fourth call queues on one key, the last is exclusive, the rest are safe;
    all are allowed but the second, which a deny rule refuses (it holds
    nothing back). `shape` (one of SHAPES) says how the schedule goes or goes
    wrong."""
    header = TraceHeader(run_id="wide", root_run_id="wide", tools=("read",), producer="test")
    facts = Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY)
    rule = RuleRef(behavior=RuleBehavior.DENY, source=Source.PROJECT, pattern="read")
    refused = facts.model_copy(update={"rules": (rule,)})
    events: list[TraceEvent] = []

    def add(factory: Any, **fields: Any) -> None:
        seq = len(events)
        events.append(factory(seq=seq, t=seq * 1e-3, causes=(seq - 1,) if seq else (), **fields))

    refs = [CallRef(occ=f"1.{i}", call_id=f"c{i}", tool="read") for i in range(width)]
    last = width - 1
    queued = [i for i in range(last) if i % 4 == 3]
    safe = [i for i in range(last) if i % 4 != 3]
    # The call left unstarted: never run ("exclusive too early"), skipped after
    # a cancel ("one skipped"), or overtaken in its queue ("queue overtaken").
    idle = {"exclusive too early": 0, "one skipped": 0, "queue overtaken": queued[0]}.get(shape)
    denied = 1

    add(TurnStart, turn=1)
    add(Request, turn=1)
    add(Assistant, turn=1, calls=tuple(refs), stop_reason="tool_use")
    for i, ref in enumerate(refs):
        cls = (
            CallClass.EXCLUSIVE if i == last else CallClass.QUEUE if i in queued else CallClass.SAFE
        )
        key = "file:/ws/a.txt" if cls is CallClass.QUEUE else None
        f = refused if i == denied else facts
        verdict = resolve(f)
        add(
            DecisionEvent,
            occ=ref.occ,
            decision=verdict.decision,
            stage=verdict.stage.value,
            facts=f,
            cls=cls,
            key=key,
        )
    for i in range(last):
        if i in (idle, denied):
            continue
        add(EffectStart, occ=refs[i].occ)
        if i in queued and shape != "queue overlaps":  # else the next one overlaps it
            add(EffectEnd, occ=refs[i].occ, outcome=EffectOutcome.OK)
    if shape == "exclusive among safe":
        add(EffectStart, occ=refs[last].occ)
    for i in safe:
        if i not in (idle, denied):
            add(EffectEnd, occ=refs[i].occ, outcome=EffectOutcome.OK)
    skipped = {idle, last} if shape == "one skipped" else set()
    if skipped:  # cancelled before the barrier: neither it nor the idle call starts
        add(StopRequest, via="test")  # the cancel's source: its causes name it (SCHED-5)
        add(Cancel, turn=1, cause=CancelCause.USER)
        for i in sorted(skipped):
            add(Result, occ=refs[i].occ, call_id=refs[i].call_id, status=ResultStatus.SKIPPED)
    else:
        add(EffectStart, occ=refs[last].occ)
        add(EffectEnd, occ=refs[last].occ, outcome=EffectOutcome.OK)
    for i, ref in enumerate(refs):
        if i == denied:
            add(Result, occ=ref.occ, call_id=ref.call_id, status=ResultStatus.DENIED)
        elif i not in skipped:
            add(Result, occ=ref.occ, call_id=ref.call_id, status=ResultStatus.OK)
    add(
        ResultsSent,
        turn=1,
        occs=tuple(ref.occ for ref in refs),
        call_ids=tuple(ref.call_id for ref in refs),
    )
    add(TurnStart, turn=2)
    add(Request, turn=2)
    add(Assistant, turn=2)
    add(RunEnd, status=RunStatus.COMPLETED)
    return header, events


@pytest.mark.parametrize("shape", SHAPES)
def test_a_wide_batch_agrees_with_the_specification(shape: str) -> None:
    header, events = _one_batch(60, shape)
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
    assert fast.checks == slow.checks and fast.transitions == slow.transitions
    assert (fast.first and fast.first.invariant) == SHAPES[shape]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_batch_of_2000_calls_is_checked_in_linear_time(shape: str) -> None:
    # Not a timing test: the O(b) `interference` scan runs only when the
    # schedule's counters say a rule is broken, that is once, at the divergence.
    header, events = _one_batch(2000, shape)
    with mock.patch.object(_replay, "interference", wraps=_replay.interference) as scan:
        wide = check_trace(events, header)
    header, events = _one_batch(60, shape)
    narrow = check_trace(events, header, reference=True)
    assert (wide.first and wide.first.invariant) == (narrow.first and narrow.first.invariant)
    assert scan.call_count == (0 if wide.ok else 1)
