"""Scheduling conformance: the four-class dispatcher under seeded random tool
latencies, over Hypothesis-drawn class mixes, cancel points and bounds.

Every recorded trace is replayed with `metis_model.check_trace` (which checks
SCHED-1..5 on the recorded effect intervals as they open and close), and the
intervals are read a second time by `sched_problems`, a restatement of
SCHED-1..3 that shares no code with the model. Deliberately wrong
dispatchers show that both readings catch what they claim to.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime.dispatch import EffectSink
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import PlannedCall
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.dispatch import execute_call
from metis_runtime.tools import ToolContext
from metis_trace import CallClass
from metis_trace import RunStatus
from tests.runtime.test_dispatch_support import BatchRun
from tests.runtime.test_dispatch_support import Probe
from tests.runtime.test_dispatch_support import op
from tests.runtime.test_dispatch_support import run_batch
from tests.runtime.test_dispatch_support import sched_problems

S, Q, X, B = CallClass.SAFE, CallClass.QUEUE, CallClass.EXCLUSIVE, CallClass.BACKGROUND

# A mix: (class, key index, fail) per call; Safe-heavy like real batches.
_call = st.tuples(
    st.sampled_from([S, S, S, Q, Q, X, B]),
    st.integers(0, 2),
    st.sampled_from([None, None, None, None, "raise", "error"]),
)
_mix = st.lists(_call, min_size=1, max_size=12)
_seed = st.integers(0, 2**32 - 1)


def _inputs(mix: Sequence[tuple[CallClass, int, str | None]], seed: int) -> list[dict[str, Any]]:
    """Seeded latencies: often 0 (a tie), else up to 4 ms."""
    rng = random.Random(seed)
    out = []
    for i, (cls, key, fail) in enumerate(mix):
        ms = 0.0 if rng.random() < 0.3 else rng.uniform(0.0, 4.0)
        out.append(op(cls, f"t{i}", ms=ms, key=f"k{key}" if cls is Q else None, fail=fail))
    return out


def _expected_status(x: dict[str, Any]) -> str:
    if x["cls"] == "background":
        return "ok"  # its failure is the job's outcome, after the handshake
    return "error" if x.get("fail") else "ok"


def _tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sched")


@settings(max_examples=40, deadline=None)
@given(mix=_mix, seed=_seed, bound=st.integers(1, 4))
def test_random_batches_conform(
    tmp_path_factory: pytest.TempPathFactory, mix: Any, seed: int, bound: int
) -> None:
    inputs = _inputs(mix, seed)
    run = run_batch(FourClassDispatcher(bound), inputs, _tmp(tmp_path_factory))  # check_trace
    assert run.result.status is RunStatus.COMPLETED
    assert sched_problems(run.events) == []
    assert run.statuses() == {f"1.{i}": _expected_status(x) for i, x in enumerate(inputs)}
    (sent,) = run.of("results_sent")
    assert list(sent.occs) == [f"1.{i}" for i in range(len(inputs))]
    assert run.probe.max_by_class["safe"] <= bound
    assert max(run.probe.max_by_key.values(), default=0) <= 1
    assert (
        len(run.of("job_done"))
        == len(run.of("handshake"))
        == sum(x["cls"] == "background" for x in inputs)
    )
    # The checks count where the batch gives them something to check (`exercised`).
    report = check_trace(run.events, run.header)
    classes = [x["cls"] for x in inputs]
    foreground = [c for c in classes if c != "background"]
    if "exclusive" in foreground and len(foreground) > 1:
        assert report.checks.get("SCHED-1", 0) > 0 and report.checks.get("SCHED-3", 0) > 0
    keys = [x["key"] for x in inputs if x["cls"] == "queue"]
    if len(keys) != len(set(keys)):
        assert report.checks.get("SCHED-2", 0) > 0


@settings(max_examples=25, deadline=None)
@given(mix=_mix, seed=_seed, bound=st.integers(1, 4), after=st.integers(0, 6))
def test_random_batches_cancelled_midway_conform(
    tmp_path_factory: pytest.TempPathFactory, mix: Any, seed: int, bound: int, after: int
) -> None:
    inputs = _inputs(mix, seed)

    async def cancel_after_starts(loop: AgentLoop, probe: Probe) -> None:
        while len(probe.order("start")) < after:
            await asyncio.sleep(0.0005)
        loop.cancel("test")

    run = run_batch(
        FourClassDispatcher(bound), inputs, _tmp(tmp_path_factory), during=cancel_after_starts
    )
    statuses = run.statuses()
    assert len(statuses) == len(inputs)
    started = {e.occ for e in run.of("effect_start")}
    for occ, status in statuses.items():
        if occ in started:
            assert status in ("ok", "error", "cancelled")
        else:
            assert status == "skipped"
    assert sched_problems(run.events) == []
    if run.of("cancel"):
        assert run.result.status is RunStatus.CANCELLED


@settings(max_examples=15, deadline=None)
@given(mix=_mix, seed=_seed)
def test_four_class_and_serial_agree_on_results(
    tmp_path_factory: pytest.TempPathFactory, mix: Any, seed: int
) -> None:
    inputs = _inputs(mix, seed)
    four = run_batch(FourClassDispatcher(), inputs, _tmp(tmp_path_factory))
    serial = run_batch(SerialDispatcher(), inputs, _tmp(tmp_path_factory))
    assert four.statuses() == serial.statuses()
    assert [e.occs for e in four.of("results_sent")] == [e.occs for e in serial.of("results_sent")]


# --- the checks have teeth: wrong dispatchers are caught ---------------------------------


Schedule = Callable[[Sequence[PlannedCall], ToolContext, EffectSink], Awaitable[None]]


class _Wrong:
    """A dispatcher wrong on purpose: `schedule` runs the batch, ignoring the cancel."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule

    async def run_batch(
        self,
        calls: Sequence[PlannedCall],
        ctx: ToolContext,
        sink: EffectSink,
        cancel: asyncio.Event,
    ) -> None:
        await self.schedule(calls, ctx, sink)


async def _all_at_once(calls: Sequence[PlannedCall], ctx: ToolContext, sink: EffectSink) -> None:
    """Starts every call at once."""
    await asyncio.gather(*(execute_call(c, ctx, sink) for c in calls))


async def _reversed_queue(calls: Sequence[PlannedCall], ctx: ToolContext, sink: EffectSink) -> None:
    """Serial, but in reverse call order."""
    for c in reversed(calls):
        await execute_call(c, ctx, sink)


@pytest.mark.metis_nonconforming
@pytest.mark.parametrize(
    ("wrong", "inputs", "invariant"),
    [
        (_Wrong(_all_at_once), [op(S, "a", ms=5), op(X, "x", ms=5)], {"SCHED-1", "SCHED-3"}),
        (_Wrong(_all_at_once), [op(Q, "a", ms=5, key="k"), op(Q, "b", ms=5, key="k")], {"SCHED-2"}),
        (_Wrong(_reversed_queue), [op(Q, "a", key="k"), op(Q, "b", key="k")], {"SCHED-2"}),
        (_Wrong(_reversed_queue), [op(S, "a"), op(X, "x")], {"SCHED-3"}),
    ],
)
def test_wrong_dispatchers_are_caught(
    tmp_path: Path, wrong: Any, inputs: list[dict[str, Any]], invariant: set[str]
) -> None:
    run: BatchRun = run_batch(wrong, inputs, tmp_path, check=False)
    report = check_trace(run.events, run.header)
    assert report.first is not None and report.first.invariant in invariant
    assert {p.split()[0] for p in sched_problems(run.events)} & invariant
