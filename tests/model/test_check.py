"""check_trace: valid runs conform; each broken invariant is caught by its ID."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import MUTATORS
from metis_check import SimConfig
from metis_check import break_trace
from metis_check import broken_trace
from metis_check import check_trace
from metis_check import simulate
from metis_check._generate import flat_run
from metis_check._mutate import RICH
from metis_check._mutate_base import _insert_after
from metis_model import INVARIANTS
from metis_trace import Mode
from metis_trace import Route
from metis_trace import Spawn
from metis_trace import dumps_trace
from metis_trace import read_trace_numbered

TRACE_IDS = [inv.id for inv in INVARIANTS if inv.id in MUTATORS]


# Invariants that no single trace can break, and where their broken cases live:
# CLOSE-7 pairs provider ids in other runtimes' transcripts (tests/conformance);
# CHILD-4, CHILD-5 hold across a tree of traces (tests/agents, tests/model/test_spawn_guard*.py);
# PLAN IDs are about turn logs: their broken logs are metis_check._plan_mutate (tests/plan);
# CLOSE-7 and CLOSE-9 are transcript invariants: their invalid examples are in tests/conformance;
# TRACE-2 is about the files of a run directory (tests/conformance/test_credentials_scan.py);
# TRACE-3 and TRACE-4 about a trace against its witness file (tests/witness/test_exits.py,
# tests/witness/test_signals.py).
NOT_PER_TRACE = {"CLOSE-7", "CLOSE-9", "CHILD-4", "CHILD-5", "TRACE-2", "TRACE-3", "TRACE-4"}


def test_every_invariant_has_an_invalid_trace_mutator() -> None:
    ids = {inv.id for inv in INVARIANTS if inv.family != "PLAN"}
    assert ids - set(MUTATORS) == NOT_PER_TRACE


@given(
    seed=st.integers(0, 10_000),
    config=st.sampled_from([SimConfig(), RICH, SimConfig(route=Route.HEADLESS)]),
)
def test_simulated_runs_conform(seed: int, config: SimConfig) -> None:
    header, events = simulate(seed, config)
    report = check_trace(events, header)
    assert report.ok, report.first
    assert report.events == len(events)


@pytest.mark.parametrize("invariant_id", TRACE_IDS)
@settings(max_examples=25)
@given(seed=st.integers(0, 5_000))
def test_broken_traces_are_rejected_with_their_id(invariant_id: str, seed: int) -> None:
    header, events = simulate(seed, RICH)
    broken = break_trace(events, invariant_id, random.Random(seed))
    if broken is None:
        header, broken = broken_trace(invariant_id, seed)
    report = check_trace(broken, header)
    assert not report.ok
    assert report.first is not None and report.first.invariant == invariant_id, report.first


def test_violation_carries_line_state_and_a_minimal_slice() -> None:
    header, events = broken_trace("CLOSE-1", 3)
    text = dumps_trace(header, events)
    header2, events2, line_of = read_trace_numbered(text.splitlines())
    report = check_trace(events2, header2, source="x.jsonl", line_of=line_of)
    v = report.first
    assert v is not None and v.invariant == "CLOSE-1"
    assert v.line == v.index + 2  # header is line 1
    assert "phase=batch" in v.state
    # The slice names the call's own events and the offending one, nothing else.
    assert v.index in v.slice and len(v.slice) < len(events)
    dup = events2[v.index]
    assert all(
        getattr(events2[s], "occ", dup.occ) == dup.occ or events2[s].kind == "assistant"
        for s in v.slice
    )


def test_report_counts_what_it_checked() -> None:
    header, events = simulate(7, RICH)
    report = check_trace(events, header)
    assert report.checks["TRACE-1"] == len(events)
    assert report.checks["AUTH-1"] == sum(e.kind == "effect_start" for e in events)
    assert sum(report.transitions.values()) == len(events)
    assert report.to_json()["ok"] is True


def test_replay_is_linear_enough() -> None:
    # Not a timing test: the model keeps only per-batch state, so the checker's
    # work per event does not grow with the trace (state size stays bounded).
    header, events = simulate(1, SimConfig(turns=400))
    from metis_model import initial_state
    from metis_model import step

    state = initial_state(header.mode, header.route, header.headless_default)
    widest = 0
    for e in events:
        out = step(state, e)
        assert not hasattr(out, "invariant")
        state = out  # type: ignore[assignment]
        widest = max(widest, len(state.calls) + len(state.jobs))
    assert widest <= SimConfig().max_batch + 20


@pytest.mark.parametrize(
    ("child", "requested", "says"),
    [
        (
            Mode.DEFAULT,
            Mode.BYPASS,
            "asked for bypassPermissions was started under a default parent",
        ),
        (Mode.DEFAULT, Mode.PLAN, "asked for plan and runs in default"),
    ],
)
def test_child2_a_spawn_against_its_recorded_request_is_rejected(
    child: Mode, requested: Mode, says: str
) -> None:
    """Mutant 21: the gate admits a request the mode order refuses (and caps the
    child at its parent's mode), or grants another mode than the one asked."""
    header, events = flat_run(2)
    assert events[2].kind == "assistant"
    spawn = Spawn(
        seq=0,
        t=0.0,
        agent_id="helper-1",
        child_mode=child,
        child_tools=("read",),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read",),
        requested_mode=requested,
    )
    unrecorded = _insert_after(events, 2, spawn.model_copy(update={"requested_mode": None}))
    assert check_trace(unrecorded, header).ok  # what the trace held before: nothing to see
    broken = _insert_after(events, 2, spawn)
    report = check_trace(broken, header)
    assert report.first is not None and report.first.invariant == "CHILD-2", report.first
    assert says in report.first.message
