"""SCHED-5's causes, read from events (specs/scheduler.md, "Causes").

Each clause has its edit (`SCHED_5_CLAUSES`): on simulated runs, both
checkers (the fast replay and the specification's `step`) report SCHED-5 at
the same event. A version-2 trace is checked as version 2 stated SCHED-5.
And a real runtime whose failing call cancels its siblings while recording a
`user` cancel is caught: nothing recorded a user's stop.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_check._mutate_sched import SCHED_5_CLAUSES
from metis_runtime import AgentLoop
from metis_runtime.dispatch import FourClassDispatcher
from metis_trace import CallClass
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import EffectOutcome
from metis_trace import ResultStatus
from metis_trace import StopRequest
from tests.runtime.test_dispatch_support import op
from tests.runtime.test_dispatch_support import run_batch

S = CallClass.SAFE


@pytest.mark.parametrize("clause", sorted(SCHED_5_CLAUSES))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 5_000))
def test_each_clause_is_caught_by_both_checkers(clause: str, seed: int) -> None:
    # The first simulated run from `seed` on that has what the clause edits.
    for s in range(seed, seed + 200):
        header, events = simulate(s, RICH)
        broken = SCHED_5_CLAUSES[clause](list(events), random.Random(s))
        if broken is not None:
            break
    assert broken is not None
    assert check_trace(events, header).ok
    fast, slow = check_trace(broken, header), check_trace(broken, header, reference=True)
    assert fast.first is not None and slow.first is not None
    assert (fast.first.invariant, fast.first.index) == ("SCHED-5", slow.first.index)
    assert slow.first.invariant == "SCHED-5"


def test_every_clause_finds_a_run_to_break() -> None:
    for clause, mutate in SCHED_5_CLAUSES.items():
        assert any(
            mutate(list(simulate(s, RICH)[1]), random.Random(s)) is not None for s in range(60)
        ), clause


def _first_with(kind: type[Any], seeds: range = range(200)) -> tuple[Any, list[Any], int]:
    for s in seeds:
        header, events = simulate(s, RICH)
        if any(isinstance(e, kind) for e in events):
            return header, events, s
    raise AssertionError(f"no simulated run has a {kind.__name__}")


def test_a_version_2_trace_is_checked_as_version_2_stated_sched_5() -> None:
    header, events, seed = _first_with(StopRequest)
    unsourced = SCHED_5_CLAUSES["user-source"](list(events), random.Random(seed))
    assert unsourced is not None and not check_trace(unsourced, header).ok
    old = header.model_copy(update={"version": 2})
    assert check_trace(unsourced, old).ok  # no sources were recorded then
    assert check_trace(unsourced, old, reference=True).ok
    closed = SCHED_5_CLAUSES["closed-as"](list(events), random.Random(seed))
    if closed is not None:  # the closure clause needs no new event: it applies to version 2
        assert check_trace(closed, old).first.invariant == "SCHED-5"  # type: ignore[union-attr]


class _InventsUserCancels:
    """A faulty dispatcher: when a call fails, it cancels the batch and
    records the cancel as the user's (the runtime's word, and a lie)."""

    def __init__(self) -> None:
        self.inner = FourClassDispatcher()

    async def run_batch(self, calls: Any, ctx: Any, sink: Any, cancel: asyncio.Event) -> None:
        class Lying:
            def __getattr__(self, name: str) -> Any:
                return getattr(sink, name)

            def result(self, occ: str, status: ResultStatus, content: str) -> None:
                sink.result(occ, status, content)
                if status is ResultStatus.ERROR:
                    sink.record_cancel("a sibling failed", CancelCause.USER)

        await self.inner.run_batch(calls, ctx, Lying(), cancel)


@pytest.mark.metis_nonconforming  # the trace is broken on purpose
def test_a_runtime_that_invents_a_user_cancel_is_caught_by_sched_5(tmp_path: Path) -> None:
    inputs = [op(S, "a", fail="error"), op(S, "b", ms=2000), op(S, "c", ms=2000)]
    run = run_batch(_InventsUserCancels(), inputs, tmp_path, check=False)
    (cancel,) = [e for e in run.events if isinstance(e, Cancel)]
    assert cancel.cause is CancelCause.USER
    ends = [e for e in run.events if e.kind == "effect_end"]
    assert any(e.outcome is EffectOutcome.CANCELLED for e in ends)
    report = check_trace(run.events, run.header)
    assert report.first is not None and report.first.invariant == "SCHED-5"
    assert "names no recorded source" in report.first.message


def test_a_users_stop_through_the_api_names_its_source_and_conforms(tmp_path: Path) -> None:
    async def stop(loop: AgentLoop, probe: Any) -> None:
        while not probe.order("start"):
            await asyncio.sleep(0.001)
        loop.cancel("the user pressed stop")

    inputs = [op(S, "a", ms=2000), op(S, "b", ms=2000)]
    run = run_batch(FourClassDispatcher(), inputs, tmp_path, during=stop)  # checked: conforms
    (request,) = [e for e in run.events if isinstance(e, StopRequest)]
    (cancel,) = [e for e in run.events if isinstance(e, Cancel)]
    assert request.via == "AgentLoop.cancel" and request.seq in cancel.causes
    assert check_trace(run.events, run.header).checks["SCHED-5"] >= 3


def test_every_phase_records_a_stops_source_and_a_sink_failure_names_its_error(
    tmp_path: Path,
) -> None:
    """The sources are enabled wherever a live run may receive them (the
    model's `ENABLED`); a `sink_failure` cancel names the sink's error. The
    runtime's trace writer writes it, so the plugin counts every transition."""
    from metis_model import resolve
    from metis_runtime import TraceWriter
    from metis_runtime._loop import make_header
    from metis_trace import Facts
    from metis_trace import Mode
    from metis_trace import ToolKind

    trace = TraceWriter(tmp_path / "t.jsonl", make_header(mode=Mode.BYPASS, tools=["op"]))
    emit = trace.emit

    def sources() -> None:
        emit("signal", (), signum=2, name="SIGINT")
        emit("stop_request", (), via="test")

    sources()  # ready
    emit("turn_start", (), turn=1)
    sources()  # preparing
    emit("request", (), turn=1)
    sources()  # streaming
    emit("assistant", (), turn=1, calls=[], stop_reason="end_turn")
    sources()  # answered
    emit("turn_start", (), turn=2)
    emit("request", (), turn=2)
    call = {"occ": "2.0", "call_id": "c0", "tool": "op", "input": {}}
    assistant = emit("assistant", (), turn=2, calls=[call], stop_reason="tool_use")
    facts = Facts(mode=Mode.BYPASS, kind=ToolKind.EXEC)
    verdict = resolve(facts)
    emit("decision", (assistant,), occ="2.0", decision=verdict.decision, stage=str(verdict.stage),
         facts=facts, cls=CallClass.EXCLUSIVE, reads=["/"], writes=["/"])  # fmt: skip
    sources()  # batch
    start = emit("effect_start", (), occ="2.0")
    error = emit("sink_error", (), sink="journal", error="disk full")
    emit("cancel", (assistant, error), turn=2, cause=CancelCause.SINK_FAILURE, reason="journal")
    emit("effect_end", (start,), occ="2.0", outcome=EffectOutcome.CANCELLED)
    result = emit("result", (), occ="2.0", call_id="c0", status=ResultStatus.CANCELLED)
    emit("results_sent", (result,), turn=2, occs=["2.0"], call_ids=["c0"])
    emit("turn_start", (), turn=3)
    emit("request", (), turn=3)
    emit("assistant", (), turn=3, calls=[], stop_reason="end_turn")
    emit("run_end", (), status="completed")
    trace.close()
    from metis_trace import read_trace

    header, events = read_trace((tmp_path / "t.jsonl").read_text().splitlines())
    report = check_trace(events, header)
    assert report.ok, report.violations
    for phase in ("ready", "preparing", "streaming", "answered", "batch"):
        for kind in ("signal", "stop_request"):
            assert report.transitions[f"{phase}--{kind}"] == 1
    assert report.transitions["batch--sink_error"] == 1
    # The same cancel without its sink's error is the runtime's word alone.
    unsourced = SCHED_5_CLAUSES["sink-source"](list(events), random.Random(0))
    assert unsourced is not None
    assert check_trace(unsourced, header).first.invariant == "SCHED-5"  # type: ignore[union-attr]


def test_conform_reads_a_version_2_trace_and_checks_it_as_then(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from metis_cli._main import cli
    from metis_trace import dumps_trace

    header, events, seed = _first_with(StopRequest)
    unsourced = SCHED_5_CLAUSES["user-source"](list(events), random.Random(seed))
    assert unsourced is not None
    old, new = tmp_path / "v2.jsonl", tmp_path / "v3.jsonl"
    old.write_text(dumps_trace(header.model_copy(update={"version": 2}), unsourced))
    new.write_text(dumps_trace(header, unsourced))
    runner = CliRunner()
    assert runner.invoke(cli, ["conform", str(old)]).exit_code == 0
    result = runner.invoke(cli, ["conform", str(new)])
    assert result.exit_code == 1 and "SCHED-5" in result.output


def test_a_journal_that_fails_records_the_sinks_error_and_its_cancel(tmp_path: Path) -> None:
    """The runtime's own sink failure: `sink_error`, then the `sink_failure`
    cancel naming it; the running sibling ends cancelled; the trace conforms."""
    from metis_runtime import Journal
    from metis_runtime._errors import JournalError
    from tests.runtime.test_dispatch_support import make_loop

    class FailingJournal(Journal):
        def commit(self, occ: str, outcome: EffectOutcome, content: str) -> None:
            raise JournalError("disk full")

    # A Queue call (an edit) completes and commits while a Safe sibling runs.
    inputs = [op(S, "slow", ms=2000), op(CallClass.QUEUE, "q")]
    loop, _, trace_path = make_loop(FourClassDispatcher(), [inputs], tmp_path)
    path = tmp_path / "journal.jsonl"
    Journal.create(path, loop.trace.header.run_id, {"task": "t"}, fsync=False).close()
    journal, _ = FailingJournal.open(path, fsync=False)
    loop.journal = journal

    async def main() -> None:
        with pytest.raises(JournalError):
            await loop.run("go")

    try:
        asyncio.run(main())
    finally:
        loop.trace.close()
        journal.close()
    from metis_trace import read_trace

    header, events = read_trace(trace_path.read_text().splitlines())
    kinds = [e.kind for e in events]
    assert "sink_error" in kinds, kinds
    (cancel,) = [e for e in events if isinstance(e, Cancel)]
    assert cancel.cause is CancelCause.SINK_FAILURE
    assert events[kinds.index("sink_error")].seq in cancel.causes
    ends = {e.occ: e.outcome for e in events if e.kind == "effect_end"}
    assert ends.get("1.0") is EffectOutcome.CANCELLED, ends  # the running sibling
    report = check_trace(events, header)
    assert report.ok, report.violations
