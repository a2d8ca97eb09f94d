"""The fast replay in check_trace equals folding the specification's `step`."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from metis_model import MUTATORS, SimConfig, break_trace, check_trace, simulate
from metis_model._mutate import RICH


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


@given(seed=st.integers(0, 1000), cut=st.integers(0, 400), kind=st.sampled_from(
    ["result", "effect_start", "effect_end", "decision", "ask_resolved", "results_sent", "repair"]))
def test_fast_replay_agrees_when_any_event_is_dropped(seed: int, cut: int, kind: str) -> None:
    header, events = simulate(seed, RICH)
    drop = [e.seq for e in events if e.kind == kind]
    if not drop:
        return
    gone = drop[cut % len(drop)]
    mangled = [e.model_copy(update={"seq": i}) for i, e in enumerate(e for e in events if e.seq != gone)]
    fast, slow = check_trace(mangled, header), check_trace(mangled, header, reference=True)
    assert _verdict(fast) == _verdict(slow)
