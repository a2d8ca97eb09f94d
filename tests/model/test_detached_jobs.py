"""Background jobs detached on purpose (`metis run --detach-jobs`): a job's
completion says `detached` exactly when it names the process group it left
running (SCHED-4); an effect never ends `detached` (LOOP-1). Both checkers
(the fast replay and the specification's `step`) agree."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import simulate
from metis_check._mutate import RICH
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import JobDone
from metis_trace import TraceEvent
from tests.model._trace_edits import first_ids
from tests.model._trace_edits import replace_event


def _detached(events: list[TraceEvent]) -> list[JobDone]:
    return [e for e in events if isinstance(e, JobDone) and e.outcome is EffectOutcome.DETACHED]


SEEDS = [s for s in range(300) if _detached(simulate(s, RICH)[1])]


def test_simulated_runs_detach_some_jobs() -> None:
    assert len(SEEDS) >= 5, SEEDS


@settings(max_examples=20)
@given(seed=st.sampled_from(SEEDS))
def test_detached_jobs_conform(seed: int) -> None:
    header, events = simulate(seed, RICH)
    assert first_ids(events, header) == (None, None)
    assert all(e.pid is not None and e.pid > 0 for e in _detached(events))


@settings(max_examples=20)
@given(
    seed=st.sampled_from(SEEDS), which=st.sampled_from(["no-pid", "zero-pid", "pid-not-detached"])
)
def test_a_detached_completion_must_name_its_process_group(seed: int, which: str) -> None:
    header, events = simulate(seed, RICH)
    done = _detached(events)[0]
    changes: dict[str, object] = {
        "no-pid": {"pid": None},
        "zero-pid": {"pid": 0},
        "pid-not-detached": {"outcome": EffectOutcome.OK},
    }[which]  # type: ignore[assignment]
    assert first_ids(replace_event(events, done.seq, **changes), header) == ("SCHED-4", "SCHED-4")


@settings(max_examples=20)
@given(seed=st.integers(0, 500))
def test_an_effect_never_ends_detached(seed: int) -> None:
    header, events = simulate(seed, RICH)
    ends = [e for e in events if isinstance(e, EffectEnd) and e.outcome is EffectOutcome.OK]
    if not ends:
        return
    broken = replace_event(events, ends[seed % len(ends)].seq, outcome=EffectOutcome.DETACHED)
    assert first_ids(broken, header) == ("LOOP-1", "LOOP-1")
