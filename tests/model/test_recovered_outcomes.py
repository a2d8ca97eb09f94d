"""RETRY-4: a resume says which outcomes it recovered from exit records.

Property tests over simulated killed runs (some execs that finished before the
kill are committed by the resuming process from their exit record), and
invalid traces: a repair that hides or invents a recovered call, a recovered
commit outside an interrupt. Both checkers (the fast replay and the
specification's `step`) report RETRY-4."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_trace import Commit
from metis_trace import Interrupt
from metis_trace import Repair
from metis_trace import Resume
from metis_trace import TraceEvent
from tests.model._trace_edits import first_ids
from tests.model._trace_edits import replace_event


def _with_recovered(limit: int = 400) -> list[int]:
    return [s for s in range(limit) if any(_recovered_repairs(simulate(s, RICH)[1]))]


def _recovered_repairs(events: list[TraceEvent]) -> list[Repair]:
    return [e for e in events if isinstance(e, Repair) and e.recovered]


SEEDS = _with_recovered()


def test_simulated_killed_runs_recover_some_outcomes() -> None:
    assert len(SEEDS) >= 5, SEEDS  # the property tests below are not vacuous


@settings(max_examples=30)
@given(seed=st.sampled_from(SEEDS))
def test_recovered_runs_conform_and_count_retry_4(seed: int) -> None:
    header, events = simulate(seed, RICH)
    assert first_ids(events, header) == (None, None)
    assert check_trace(events, header).checks["RETRY-4"] >= 2  # the commit and the repair
    for repair in _recovered_repairs(events):
        # A recovered call is answered, never stubbed.
        assert not set(repair.recovered) & set(repair.stubbed)


@settings(max_examples=30)
@given(seed=st.sampled_from(SEEDS))
def test_a_repair_that_hides_a_recovered_call_is_rejected(seed: int) -> None:
    header, events = simulate(seed, RICH)
    repair = _recovered_repairs(events)[0]
    hidden = replace_event(events, repair.seq, recovered=repair.recovered[1:])
    assert first_ids(hidden, header) == ("RETRY-4", "RETRY-4")


@settings(max_examples=30)
@given(seed=st.sampled_from(SEEDS))
def test_a_commit_claimed_recovered_is_only_one_the_repair_names(seed: int) -> None:
    header, events = simulate(seed, RICH)
    repair = _recovered_repairs(events)[0]
    # Naming an answered call that was committed normally, or a stubbed one.
    normal = [
        e.occ for e in events if isinstance(e, Commit) and not e.recovered and e.seq < repair.seq
    ]
    invented = (*repair.recovered, *(repair.stubbed or normal[-1:]))
    if invented == repair.recovered:
        return
    wrong = replace_event(events, repair.seq, recovered=invented)
    assert first_ids(wrong, header) == ("RETRY-4", "RETRY-4")


def _commits_outside_an_interrupt(events: list[TraceEvent]) -> list[Commit]:
    found, interrupted = [], False
    for e in events:
        if isinstance(e, Interrupt):
            interrupted = True
        elif isinstance(e, Resume):
            interrupted = False
        elif isinstance(e, Commit) and not interrupted:
            found.append(e)
    return found


@settings(max_examples=30)
@given(seed=st.integers(0, 2_000))
def test_a_recovered_commit_outside_an_interrupt_is_rejected(seed: int) -> None:
    header, events = simulate(seed, RICH)
    commits = _commits_outside_an_interrupt(events)
    if not commits:
        return
    broken = replace_event(events, commits[seed % len(commits)].seq, recovered=True)
    assert first_ids(broken, header) == ("RETRY-4", "RETRY-4")
