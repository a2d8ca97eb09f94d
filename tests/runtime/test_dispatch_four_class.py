"""The four-class dispatcher: one test per class rule, with instrumented tools,
through the real loop and a real trace file (every trace passes
`check_trace`), plus direct `run_batch` tests for what the loop cannot show.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from pathlib import Path
from typing import Any

import pytest
from test_dispatch_support import OpTool
from test_dispatch_support import Probe
from test_dispatch_support import assert_conforms
from test_dispatch_support import classification_of
from test_dispatch_support import intervals
from test_dispatch_support import make_loop
from test_dispatch_support import op
from test_dispatch_support import overlapping
from test_dispatch_support import read
from test_dispatch_support import run_batch
from test_dispatch_support import sched_problems

import metis_runtime
import metis_runtime.dispatch as dispatch
from metis_runtime import AgentLoop
from metis_runtime import ConfigError
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import PlannedCall
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_trace import CallClass
from metis_trace import EffectOutcome
from metis_trace import ResultStatus
from metis_trace import RunStatus
from tests._exports import assert_all_lists_the_public_names

S, Q, X, B = CallClass.SAFE, CallClass.QUEUE, CallClass.EXCLUSIVE, CallClass.BACKGROUND


# --- the public surface -------------------------------------------------------------


def test_exported_and_a_dispatcher() -> None:
    assert "FourClassDispatcher" in dispatch.__all__
    assert_all_lists_the_public_names(dispatch)
    assert isinstance(FourClassDispatcher(), Dispatcher)
    assert FourClassDispatcher().safe_concurrency == 8
    assert repr(FourClassDispatcher(3)) == "FourClassDispatcher(safe_concurrency=3)"
    assert metis_runtime.ConfigError is ConfigError


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "4"])
def test_bound_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ConfigError, match="safe_concurrency"):
        FourClassDispatcher(bad)


# --- Safe ----------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [1, 3, 8])
def test_safe_calls_run_concurrently_up_to_the_bound(tmp_path: Path, bound: int) -> None:
    run = run_batch(
        FourClassDispatcher(bound), [op(S, f"s{i}", ms=15) for i in range(12)], tmp_path
    )
    assert run.result.status is RunStatus.COMPLETED
    assert run.probe.max_by_class["safe"] == bound
    assert set(run.statuses().values()) == {"ok"}
    # Started in call order even when they wait for a slot.
    assert run.probe.order("start") == [f"s{i}" for i in range(12)]


def test_results_complete_out_of_order_but_are_sent_in_call_order(tmp_path: Path) -> None:
    run = run_batch(
        FourClassDispatcher(), [op(S, f"s{i}", ms=40 - 10 * i) for i in range(4)], tmp_path
    )
    completed = [e.occ for e in run.of("result")]
    assert completed == ["1.3", "1.2", "1.1", "1.0"]
    (sent,) = run.of("results_sent")
    assert list(sent.occs) == ["1.0", "1.1", "1.2", "1.3"]
    request = run.loop.provider.requests[1]  # type: ignore[attr-defined]
    ids = [b.tool_use_id for b in request.messages[-1].content]
    assert ids == ["c0.0", "c0.1", "c0.2", "c0.3"]


# --- Queue ---------------------------------------------------------------------------


def test_queue_calls_of_one_key_are_fifo_and_never_overlap(tmp_path: Path) -> None:
    inputs = [op(Q, f"q{i}", ms=(7 * i) % 5 + 1, key="file:a") for i in range(8)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    assert run.probe.max_by_key["file:a"] == 1
    assert run.probe.order("start") == [f"q{i}" for i in range(8)]
    ivs = sorted(intervals(run.events).values(), key=lambda i: i.index)
    for a, b in itertools.pairwise(ivs):
        assert a.e < b.s
    assert sched_problems(run.events) == []


def test_queue_calls_of_different_keys_overlap(tmp_path: Path) -> None:
    inputs = [op(Q, "a", ms=30, key="k1"), op(Q, "b", ms=30, key="k2"), op(Q, "c", ms=1, key="k1")]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    iv = intervals(run.events)
    assert overlapping(iv["1.0"], iv["1.1"])
    assert not overlapping(iv["1.0"], iv["1.2"])
    assert iv["1.2"].s > iv["1.0"].e


def test_a_later_call_may_overtake_an_earlier_unfinished_one(tmp_path: Path) -> None:
    inputs = [op(S, "slow", ms=60), op(Q, "q", ms=1, key="k"), op(S, "fast", ms=1)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    iv = intervals(run.events)
    assert iv["1.1"].e < iv["1.0"].e
    assert iv["1.2"].e < iv["1.0"].e


@pytest.mark.parametrize("dispatcher", [FourClassDispatcher(), FourClassDispatcher(1)])
def test_parallel_appends_to_one_file_lose_no_update(tmp_path: Path, dispatcher: Any) -> None:
    # Each call reads the file, yields, and writes it back with one more line:
    # run at once, two of them would lose one's line.
    rng = random.Random(7)
    n = 60
    inputs = [
        op(Q, f"line{i}", ms=rng.uniform(0, 3), key="file:log", append="log.txt") for i in range(n)
    ]
    run = run_batch(dispatcher, inputs, tmp_path, files={"log.txt": ""})
    assert (run.workspace / "log.txt").read_text().splitlines() == [f"line{i}" for i in range(n)]
    assert run.probe.max_by_key["file:log"] == 1


def test_the_append_test_would_catch_a_lost_update(tmp_path: Path) -> None:
    # Control: the same appends classified Safe (no key) do run at once and lose lines.
    inputs = [op(S, f"line{i}", ms=2, append="log.txt") for i in range(8)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path, files={"log.txt": ""})
    assert len((run.workspace / "log.txt").read_text().splitlines()) < 8


def test_parallel_real_edits_of_one_file_all_land(tmp_path: Path) -> None:
    n = 40
    inputs = [{"path": "f.txt", "old": "END\n", "new": f"line {i}\nEND\n"} for i in range(n)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path, tool="edit", files={"f.txt": "END\n"})
    assert set(run.statuses().values()) == {"ok"}
    expected = [f"line {i}" for i in range(n)] + ["END"]
    assert (run.workspace / "f.txt").read_text().splitlines() == expected
    keys = {e.key for e in run.of("decision")}
    assert len(keys) == 1 and next(iter(keys)).startswith("file:")


# --- Exclusive -----------------------------------------------------------------------


def test_an_exclusive_call_is_a_barrier(tmp_path: Path) -> None:
    inputs = [
        op(S, "s0", ms=30),
        op(Q, "q0", ms=20, key="k"),
        op(B, "b0", ms=50),
        op(X, "x", ms=20),
        op(S, "s1", ms=5),
        op(Q, "q1", ms=5, key="k"),
        op(X, "y", ms=5),
        op(X, "z", ms=5),
        op(S, "s2", ms=1),
    ]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    iv = intervals(run.events)
    assert sched_problems(run.events) == []
    x, y, z = iv["1.3"], iv["1.6"], iv["1.7"]
    for earlier in ("1.0", "1.1", "1.2"):
        assert iv[earlier].e < x.s
    for later in ("1.4", "1.5"):
        assert x.e < iv[later].s < y.s
        assert iv[later].e < y.s
    assert y.e < z.s and z.e < iv["1.8"].s
    # The barrier waits for the background call's handshake, not its detached work.
    (job_done,) = run.of("job_done")
    assert x.s < job_done.seq
    assert run.probe.max_by_class["exclusive"] == 1


def test_exclusive_first_and_last(tmp_path: Path) -> None:
    inputs = [op(X, "x0", ms=10), op(S, "s", ms=1), op(S, "t", ms=1), op(X, "x1", ms=1)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    assert sched_problems(run.events) == []
    iv = intervals(run.events)
    assert overlapping(iv["1.1"], iv["1.2"])


# --- Background ----------------------------------------------------------------------


def test_background_hands_a_job_id_back_at_once_and_its_completion_pairs(tmp_path: Path) -> None:
    inputs = [op(B, "b", ms=40), op(S, "s", ms=5)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    (handshake,) = run.of("handshake")
    (job_done,) = run.of("job_done")
    assert job_done.job == handshake.job and job_done.occ == handshake.occ == "1.0"
    assert tuple(job_done.causes) == (handshake.seq,)
    assert job_done.outcome is EffectOutcome.OK
    results = {e.occ: e for e in run.of("result")}
    assert results["1.0"].content == f"started background job {handshake.job}"
    assert results["1.0"].seq < results["1.1"].seq < job_done.seq
    assert run.result.status is RunStatus.COMPLETED


def test_a_job_done_during_the_batch_pairs_and_is_noted(tmp_path: Path) -> None:
    # The job ends while a sibling still runs: job_done lands inside the batch.
    inputs = [op(B, "b", ms=1), op(S, "slow", ms=80)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    (handshake,) = run.of("handshake")
    (job_done,) = run.of("job_done")
    (sent,) = run.of("results_sent")
    assert handshake.seq < job_done.seq < sent.seq
    assert tuple(job_done.causes) == (handshake.seq,)
    # The loop tells the model in the same results message.
    results = run.loop.provider.requests[1].messages[-1]  # type: ignore[attr-defined]
    notes = [b.text for b in results.content if b.kind == "text"]
    assert any(handshake.job in n for n in notes)


@pytest.mark.parametrize("fail", ["raise", "error"])
def test_background_failing_after_its_handshake(tmp_path: Path, fail: str) -> None:
    inputs = [op(B, "b", ms=20, fail=fail), op(S, "s", ms=1)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    assert run.statuses() == {"1.0": "ok", "1.1": "ok"}
    (handshake,) = run.of("handshake")
    (job_done,) = run.of("job_done")
    assert job_done.outcome is EffectOutcome.ERROR
    assert handshake.seq < job_done.seq and job_done.job == handshake.job
    assert run.result.status is RunStatus.COMPLETED


def test_background_jobs_still_running_at_the_end_are_cancelled_and_reported(
    tmp_path: Path,
) -> None:
    run = run_batch(FourClassDispatcher(), [op(B, "b", ms=5000)], tmp_path, job_wait=0.05)
    (job_done,) = run.of("job_done")
    assert job_done.outcome is EffectOutcome.CANCELLED
    assert run.result.status is RunStatus.COMPLETED


# --- failure and cancellation ---------------------------------------------------------


def test_a_failing_call_never_cancels_its_siblings(tmp_path: Path) -> None:
    inputs = [
        op(S, "raises", ms=1, fail="raise"),
        op(S, "slow", ms=30),
        op(Q, "errs", ms=1, key="k", fail="error"),
        op(Q, "after", ms=1, key="k"),
        op(X, "x", ms=1, fail="raise"),
        op(S, "last", ms=1),
    ]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    assert run.statuses() == {
        "1.0": "error",
        "1.1": "ok",
        "1.2": "error",
        "1.3": "ok",
        "1.4": "error",
        "1.5": "ok",
    }
    assert not run.of("cancel") and not run.of("interrupt")
    assert {e.occ: e.outcome.value for e in run.of("effect_end")}["1.0"] == "error"


async def _cancel_when(loop: AgentLoop, probe: Probe, started: int) -> None:
    while len(probe.order("start")) < started:
        await asyncio.sleep(0.001)
    loop.cancel("test cancel")


def test_cancel_mid_batch_cancels_running_calls_and_skips_the_rest(tmp_path: Path) -> None:
    inputs = [
        op(S, "s0", ms=2000),
        op(S, "s1", ms=2000),
        op(S, "waits-for-a-slot", ms=1),
        op(Q, "q0", ms=2000, key="k"),
        op(Q, "q1", ms=1, key="k"),
        op(X, "x", ms=1),
        op(S, "after", ms=1),
    ]
    run = run_batch(
        FourClassDispatcher(2),
        inputs,
        tmp_path,
        during=lambda loop, probe: _cancel_when(loop, probe, 3),
    )
    assert run.result.status is RunStatus.CANCELLED
    assert run.statuses() == {
        "1.0": "cancelled",
        "1.1": "cancelled",
        "1.2": "skipped",
        "1.3": "cancelled",
        "1.4": "skipped",
        "1.5": "skipped",
        "1.6": "skipped",
    }
    (cancel,) = run.of("cancel")
    assert all(e.seq > cancel.seq for e in run.of("result"))
    assert {e.occ for e in run.of("effect_start")} == {"1.0", "1.1", "1.3"}
    (sent,) = run.of("results_sent")
    assert list(sent.occs) == [f"1.{i}" for i in range(7)]


def test_cancel_while_an_exclusive_runs(tmp_path: Path) -> None:
    inputs = [op(S, "s", ms=1), op(X, "x", ms=2000), op(S, "t", ms=1)]
    run = run_batch(
        FourClassDispatcher(),
        inputs,
        tmp_path,
        during=lambda loop, probe: _cancel_when(loop, probe, 2),
    )
    assert run.statuses() == {"1.0": "ok", "1.1": "cancelled", "1.2": "skipped"}
    ends = {e.occ: e for e in run.of("effect_end")}
    assert ends["1.1"].outcome is EffectOutcome.CANCELLED and not ends["1.1"].committed


def test_stopped_from_outside_records_an_interrupt(tmp_path: Path) -> None:
    inputs = [op(S, "s", ms=2000), op(X, "x", ms=1)]
    loop, probe, trace_path = make_loop(FourClassDispatcher(), [inputs], tmp_path)

    async def main() -> None:
        task = asyncio.ensure_future(loop.run("go"))
        while not probe.order("start"):
            await asyncio.sleep(0.001)
        loop.stop_requested("test")  # the interrupt's source (SCHED-5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        loop.trace.close()
    header, events = read(trace_path)
    assert_conforms(header, events)
    kinds = [e.kind for e in events]
    assert "interrupt" in kinds and "skipped" not in {getattr(e, "status", "") for e in events}
    ends = [e for e in events if e.kind == "effect_end"]
    assert [(e.occ, e.outcome) for e in ends] == [("1.0", EffectOutcome.CANCELLED)]
    assert probe.order("end") == ["s"]  # the running tool was cancelled, x never ran


# --- scale and reuse ------------------------------------------------------------------


def test_a_thousand_call_batch(tmp_path: Path) -> None:
    rng = random.Random(1000)
    classes = [S] * 60 + [Q] * 30 + [X] * 5 + [B] * 5
    inputs = []
    for i in range(1000):
        cls = rng.choice(classes)
        key = f"k{rng.randrange(5)}" if cls is Q else None
        inputs.append(op(cls, f"c{i}", key=key, fail="error" if i % 97 == 0 else None))
    run = run_batch(FourClassDispatcher(), inputs, tmp_path)
    assert run.result.status is RunStatus.COMPLETED
    statuses = run.statuses()
    assert len(statuses) == 1000
    assert {s for o, s in statuses.items() if int(o.split(".")[1]) % 97} == {"ok"}
    assert sched_problems(run.events) == []
    (sent,) = run.of("results_sent")
    assert list(sent.occs) == [f"1.{i}" for i in range(1000)]
    assert run.probe.max_by_class["safe"] > 1


def test_the_dispatcher_is_reused_across_turns(tmp_path: Path) -> None:
    d = FourClassDispatcher(2)
    turn = [op(S, "a", ms=5), op(X, "x", ms=1), op(Q, "q", key="k", ms=1), op(S, "b", ms=1)]
    run = run_batch(d, turn, tmp_path, more_turns=[turn, turn])
    assert run.result.status is RunStatus.COMPLETED
    assert len(run.of("results_sent")) == 3
    assert set(run.statuses().values()) == {"ok"}


# --- run_batch directly ---------------------------------------------------------------


class ListSink:
    """An EffectSink keeping what it was told; `fail_on`: raise on that occ's result."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.events: list[tuple[str, str]] = []
        self.fail_on = fail_on

    def effect_start(self, occ: str) -> None:
        self.events.append(("start", occ))

    def effect_end(
        self, occ: str, outcome: EffectOutcome, committed: bool, content: str = ""
    ) -> None:
        self.events.append((f"end:{outcome.value}", occ))

    def handshake(self, occ: str, job: str) -> None:
        self.events.append(("handshake", occ))

    def timed_out(self, occ: str, limit_s: float) -> None:
        self.events.append(("timed_out", occ))

    def result(self, occ: str, status: ResultStatus, content: str) -> None:
        if occ == self.fail_on:
            raise OSError("disk full")
        self.events.append((f"result:{status.value}", occ))


def _planned(tool: OpTool, inputs: list[dict[str, Any]]) -> list[PlannedCall]:
    out = []
    for i, x in enumerate(inputs):
        out.append(PlannedCall(f"1.{i}", i, f"c{i}", tool, x, classification_of(x)))
    return out


def _direct(
    dispatcher: Any, inputs: list[dict[str, Any]], tmp_path: Path, sink: ListSink, pre_cancel: bool
) -> Probe:
    probe = Probe()
    calls = _planned(OpTool(probe), inputs)

    async def main() -> None:
        jobs = JobManager()
        ctx = ToolContext(tmp_path, {}, jobs)
        cancel = asyncio.Event()
        if pre_cancel:
            cancel.set()
        try:
            await dispatcher.run_batch(calls, ctx, sink, cancel)
        finally:
            await jobs.cancel_all()

    asyncio.run(main())
    return probe


def test_every_call_gets_exactly_one_result(tmp_path: Path) -> None:
    sink = ListSink()
    inputs = [
        op(c, f"t{i}", ms=1, key="k" if c is Q else None) for i, c in enumerate([S, Q, X, B, Q, S])
    ]
    _direct(FourClassDispatcher(), inputs, tmp_path, sink, pre_cancel=False)
    results = sorted(occ for what, occ in sink.events if what.startswith("result:"))
    assert results == [f"1.{i}" for i in range(6)]


def test_a_cancel_before_the_batch_skips_every_call(tmp_path: Path) -> None:
    sink = ListSink()
    probe = _direct(
        FourClassDispatcher(), [op(S, "a"), op(X, "b")], tmp_path, sink, pre_cancel=True
    )
    assert sink.events == [("result:skipped", "1.0"), ("result:skipped", "1.1")]
    assert probe.log == []


def test_an_empty_batch(tmp_path: Path) -> None:
    sink = ListSink()
    _direct(FourClassDispatcher(), [], tmp_path, sink, pre_cancel=False)
    assert sink.events == []


@pytest.mark.parametrize("dispatcher", [FourClassDispatcher(), SerialDispatcher()])
def test_a_failing_sink_is_raised_and_stops_the_batch(tmp_path: Path, dispatcher: Any) -> None:
    sink = ListSink(fail_on="1.0")
    inputs = [op(S, "a", ms=1), op(S, "b", ms=500), op(X, "x", ms=1)]
    with pytest.raises(OSError, match="disk full"):
        _direct(dispatcher, inputs, tmp_path, sink, pre_cancel=False)
    started = {occ for what, occ in sink.events if what == "start"}
    assert "1.2" not in started
    if "1.1" in started:  # four-class: the sibling was running and is cancelled
        assert ("end:cancelled", "1.1") in sink.events


class _ElsewhereTool(OpTool):
    """An `op` whose work, as the dispatcher is told, runs in another process."""

    out_of_process = True


def test_out_of_process_safe_calls_start_first_within_their_segment(tmp_path: Path) -> None:
    probe = Probe()
    here, elsewhere = OpTool(probe), _ElsewhereTool(probe)
    inputs = [
        (here, op(S, "read1", ms=1)),
        (here, op(Q, "edit1", ms=1, key="k")),
        (elsewhere, op(S, "grep1", ms=1)),
        (here, op(S, "read2", ms=1)),
        (elsewhere, op(S, "bash1", ms=1)),
        (here, op(X, "barrier", ms=1)),
        (here, op(S, "read3", ms=1)),
        (elsewhere, op(S, "bash2", ms=1)),
    ]
    calls = [
        PlannedCall(f"1.{i}", i, f"c{i}", tool, x, classification_of(x))
        for i, (tool, x) in enumerate(inputs)
    ]
    sink = ListSink()

    async def main() -> None:
        ctx = ToolContext(tmp_path, {}, JobManager())
        await FourClassDispatcher().run_batch(calls, ctx, sink, asyncio.Event())

    asyncio.run(main())
    # Per segment: the other process's Safe calls, then the in-process ones (an
    # in-process Queue call too, after the Safe workers: its work would hold
    # the loop while the spawns wait); the barrier still divides.
    assert probe.order("start") == [
        "grep1", "bash1", "read1", "read2", "edit1", "barrier", "bash2", "read3",
    ]  # fmt: skip
    results = [occ for what, occ in sink.events if what.startswith("result:")]
    assert sorted(results) == [f"1.{i}" for i in range(len(inputs))]


def test_safe_calls_share_at_most_bound_worker_tasks(tmp_path: Path) -> None:
    # A task per Safe call would cost a task, a callback and a loop iteration
    # each; the dispatcher runs them in at most `bound` workers instead.
    probe = Probe()
    calls = _planned(OpTool(probe), [op(S, f"s{i}") for i in range(100)])
    created: list[str] = []
    sink = ListSink()

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
            created.append(coro.__qualname__)
            return asyncio.Task(coro, loop=loop, **kw)

        loop.set_task_factory(factory)
        ctx = ToolContext(tmp_path, {}, JobManager())
        await FourClassDispatcher(3).run_batch(calls, ctx, sink, asyncio.Event())

    asyncio.run(main())
    assert probe.order("start") == [f"s{i}" for i in range(100)]
    assert probe.max_by_class["safe"] <= 3
    workers = [name for name in created if name.endswith("_safe_worker")]
    assert 1 <= len(workers) <= 3
    assert not any(name.endswith("_execute") for name in created)
