"""Dispatch benchmarks: ratios measured side by side in this run, in
`benchmark.extra_info`; nothing here asserts a time.

1. Per-call overhead: N no-op calls in one batch through the real loop
   (production `Gate`, `FourClassDispatcher`, a real trace file and journal),
   against pydantic-ai's `Agent` + `FunctionModel` running the same scripted
   calls with a no-op tool. The per-call cost is the slope between a small
   and a large batch (fixed per-run costs cancel). The target (ratio <=
   0.25) is about gate + dispatch + trace writing: measured as what the
   full loop costs per call more than the same loop with those three
   replaced by null stand-ins (the provider, the session and the loop's
   bookkeeping cost the same on both sides). The whole loop's ratio is
   reported too.
   With METIS_BENCH_PROFILE=1 the metis side is profiled and the top costs
   by file are recorded too.
2. Four-class mediation against forced serialization on real-I/O batches
   (`metis_studies.dispatch`): the CPU-bound batch of the paper's shape
   (reads, greps, two subprocesses, one edit, one background job), its
   variant with `grep -r` subprocesses, and the I/O-bound batch (sleeping
   subprocesses, a slow pipe, fsynced writes). Paired runs in alternating
   order; the median ratio four-class/serial (target <= 0.545), the mean
   paired difference with a bootstrap 95% interval, the pairs mediation won,
   and the makespan over the critical path (target <= 1.15), with the bounds
   no schedule beats: the critical path, the CPU work over the cores, the
   in-process sum.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import PlannedCall
from metis_runtime.dispatch import SerialDispatcher
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import Classification
from metis_runtime.tools import JobManager
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import ToolSpec
from metis_studies.dispatch import BATCHES
from metis_studies.dispatch import TARGET_MAKESPAN
from metis_studies.dispatch import TARGET_RATIO
from metis_studies.dispatch import io_run
from metis_studies.dispatch import run_batch
from metis_studies.faults._harness import close_loop
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RunStatus
from metis_trace import ToolKind
from tests.runtime.test_loop_support import assert_conforms  # run from the root
from tests.runtime.test_loop_support import read  # run from the root

SMALL, LARGE = 20, 420  # batch sizes of the per-call slope
ROUNDS = int(os.environ.get("METIS_BENCH_ROUNDS", "15"))
PAIRS = int(os.environ.get("METIS_BENCH_PAIRS", "30"))


# --- 1. per-call overhead -------------------------------------------------------------


class NoopTool(Tool):
    spec = ToolSpec("noop", "does nothing", {"type": "object", "properties": {}})

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.READ_ONLY

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return Classification(CallClass.SAFE, None, ToolKind.READ_ONLY)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("ok")


# The loop without the three parts the per-call target is about: a gate
# that returns one precomputed decision, a dispatcher that awaits each call
# in turn with nothing around it, and a trace that only counts. What the
# full loop costs more per call is the cost of gate + dispatch + trace writing.


class _AllowGate:
    def __init__(self, decision: Any) -> None:
        self._decision = decision

    def decide(self, *args: Any) -> Any:
        return self._decision

    async def resolve_ask(self, *args: Any) -> Any:
        raise AssertionError("nothing asks")


class _InlineDispatcher:
    async def run_batch(
        self, calls: Sequence[PlannedCall], ctx: ToolContext, sink: Any, cancel: asyncio.Event
    ) -> None:
        for call in calls:
            sink.effect_start(call.occ)
            output = await call.tool.run(call.input, ctx)
            sink.effect_end(call.occ, EffectOutcome.OK, False)
            sink.result(call.occ, ResultStatus.OK, output.content)


class _CountingTrace(TraceWriter):
    def emit(self, kind: str, causes: tuple[int, ...] = (), **fields: Any) -> int:
        seq = self._n = getattr(self, "_n", 0) + 1
        return seq


def _metis_loop(
    n: int, root: Path, dispatcher: Dispatcher, *, journal: bool = True, bare: bool = False
) -> tuple[AgentLoop, Path]:
    """The loop running `n` no-op calls in one batch. `bare`: without
    gate, dispatch and trace writing (their null stand-ins above)."""
    workspace = root / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    trace_path = root / "trace.jsonl"
    registry = ToolRegistry([NoopTool()])
    gate: Any = Gate(
        Policy(), Mode.DEFAULT, workspace, Route.HEADLESS, headless_default=Decision.DENY
    )
    header = make_header(mode=Mode.DEFAULT, tools=registry.names(), route=Route.HEADLESS)
    trace = TraceWriter(trace_path, header)
    if bare:
        gate = _AllowGate(gate.decide("noop", {}, ToolKind.READ_ONLY, (), None))
        dispatcher = _InlineDispatcher()
        trace.close()
        trace = _CountingTrace(io.StringIO(), header)
    blocks = [ToolUseBlock(id=f"c{i}", name="noop", input={}) for i in range(n)]
    loop = AgentLoop(
        ScriptedProvider([blocks, [TextBlock(text="done")]]),
        registry,
        gate,
        ToolContext(workspace, {}, JobManager()),
        trace,
        journal=Journal.create(root / "journal.jsonl", header.run_id, {}) if journal else None,
        dispatcher=dispatcher,
    )
    return loop, trace_path


def _time_metis(
    n: int, dispatcher: Dispatcher, *, journal: bool = True, bare: bool = False
) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        loop, trace_path = _metis_loop(n, Path(tmp), dispatcher, journal=journal, bare=bare)
        try:
            start = time.perf_counter()
            result = asyncio.run(loop.run("go"))
            elapsed = time.perf_counter() - start
        finally:
            close_loop(loop)
        assert result.status is RunStatus.COMPLETED
        if not bare:
            header, events = read(trace_path)
            assert_conforms(header, events)
            assert sum(e.kind == "result" for e in events) == n
    return elapsed


def _pydantic_ai_agent(n: int) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.messages import TextPart
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.function import AgentInfo
    from pydantic_ai.models.function import FunctionModel

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[ToolCallPart("noop", {}, tool_call_id=f"c{i}") for i in range(n)]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(answer))

    @agent.tool_plain
    async def noop() -> str:  # async like metis's: no thread hop
        return "ok"

    return agent


def _time_pydantic_ai(n: int) -> float:
    agent = _pydantic_ai_agent(n)
    start = time.perf_counter()
    result = asyncio.run(agent.run("go"))
    elapsed = time.perf_counter() - start
    assert result.output == "done"
    return elapsed


def _sample(timer: Callable[[int], float]) -> dict[int, float]:
    return {n: timer(n) for n in (SMALL, LARGE)}


def _per_call(samples: Sequence[Mapping[int, float]]) -> float:
    large = statistics.median(s[LARGE] for s in samples)
    small = statistics.median(s[SMALL] for s in samples)
    return (large - small) / (LARGE - SMALL)


def _slopes(samples: Sequence[Mapping[int, float]]) -> list[float]:
    """The per-call cost of each round alone."""
    return [(s[LARGE] - s[SMALL]) / (LARGE - SMALL) for s in samples]


class _NullSink:
    def effect_start(self, occ: str) -> None:
        pass

    def effect_end(
        self, occ: str, outcome: EffectOutcome, committed: bool, content: str = ""
    ) -> None:
        pass

    def handshake(self, occ: str, job: str) -> None:
        pass

    def timed_out(self, occ: str, limit_s: float) -> None:
        pass

    def result(self, occ: str, status: ResultStatus, content: str) -> None:
        pass


def _dispatch_only(dispatcher: Dispatcher, n: int = 2000, rounds: int = 5) -> float:
    """Seconds per no-op call of `run_batch` alone (a sink that records nothing)."""
    tool = NoopTool()
    safe = Classification(CallClass.SAFE, None, ToolKind.READ_ONLY)
    calls = [PlannedCall(f"1.{i}", i, f"c{i}", tool, {}, safe) for i in range(n)]

    async def main() -> float:
        ctx = ToolContext(Path(tempfile.gettempdir()), {}, JobManager())
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            await dispatcher.run_batch(calls, ctx, _NullSink(), asyncio.Event())
            best = min(best, time.perf_counter() - start)
        return best / n

    return asyncio.run(main())


def _each(fn: Callable[[], object], n: int = 5000, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / n


def _breakdown() -> dict[str, float]:
    """Seconds per piece of one no-op call's path: the four trace events a
    call records (`TraceWriter.emit` to a real file) and the gate's decision."""
    with tempfile.TemporaryDirectory() as tmp:
        gate = Gate(Policy(), Mode.DEFAULT, tmp, Route.HEADLESS, headless_default=Decision.DENY)
        d = gate.decide("noop", {}, ToolKind.READ_ONLY, (), None)
        trace = TraceWriter(Path(tmp) / "t.jsonl", make_header(mode=Mode.DEFAULT, tools=["noop"]))
        try:
            out = {
                "gate_decide": _each(lambda: gate.decide("noop", {}, ToolKind.READ_ONLY, (), None)),
                "emit_decision": _each(
                    lambda: trace.emit(
                        "decision",
                        (1,),
                        occ="1.0",
                        decision=d.decision,
                        stage=str(d.stage),
                        rule=d.rule,
                        facts=d.facts,
                        route=d.route,
                        cls=CallClass.SAFE,
                        key=None,
                    )
                ),
                "emit_effect_start": _each(lambda: trace.emit("effect_start", (2,), occ="1.0")),
                "emit_effect_end": _each(
                    lambda: trace.emit(
                        "effect_end", (3,), occ="1.0", outcome=EffectOutcome.OK, committed=False
                    )
                ),
                "emit_result": _each(
                    lambda: trace.emit(
                        "result",
                        (4,),
                        occ="1.0",
                        call_id="c0",
                        status=ResultStatus.OK,
                        content="ok",
                    )
                ),
            }
        finally:
            trace.close()
    return out


def _profile_metis(n: int) -> dict[str, float]:
    """Share of the metis run's time per source area (cumulative, by file)."""
    with tempfile.TemporaryDirectory() as tmp:
        loop, _ = _metis_loop(n, Path(tmp), FourClassDispatcher())
        profiler = cProfile.Profile()
        profiler.enable()
        asyncio.run(loop.run("go"))
        profiler.disable()
        close_loop(loop)
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]
    by_area: dict[str, float] = {}
    for (filename, _, _), (_, _, tt, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        area = _area(filename)
        by_area[area] = by_area.get(area, 0.0) + tt
    return {k: round(v / total, 3) for k, v in sorted(by_area.items(), key=lambda kv: -kv[1])[:12]}


def _area(filename: str) -> str:
    for marker in ("metis_runtime/", "metis_model/", "pydantic/", "pydantic_core", "asyncio/"):
        if marker in filename:
            tail = filename.split(marker, 1)[1]
            return marker + tail if marker.startswith("metis") else marker.rstrip("/")
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins"  # json, os.write, fsync, ...
    return Path(filename).name


def test_per_call_overhead_against_pydantic_ai(benchmark: Any) -> None:
    sides: dict[str, Callable[[int], float]] = {
        "metis": lambda n: _time_metis(n, FourClassDispatcher()),
        "loop_only": lambda n: _time_metis(n, FourClassDispatcher(), bare=True),
        "serial": lambda n: _time_metis(n, SerialDispatcher()),
        "pai": _time_pydantic_ai,
    }
    samples: dict[str, list[dict[int, float]]] = {name: [] for name in sides}
    # Interleaved round by round, so load on the machine hits every side alike.
    for _ in range(ROUNDS):
        for name, timer in sides.items():
            samples[name].append(_sample(timer))
    benchmark.pedantic(_time_metis, args=(LARGE, FourClassDispatcher()), rounds=3, iterations=1)
    per = {name: _per_call(s) for name, s in samples.items()}
    four_only = _dispatch_only(FourClassDispatcher())
    serial_only = _dispatch_only(SerialDispatcher())
    parts = _breakdown()
    info = benchmark.extra_info
    mediation = per["metis"] - per["loop_only"]
    info["per_call_us_metis_four_class"] = round(per["metis"] * 1e6, 1)
    info["per_call_us_metis_loop_only"] = round(per["loop_only"] * 1e6, 1)
    info["per_call_us_gate_dispatch_trace"] = round(mediation * 1e6, 1)
    info["per_call_us_metis_serial"] = round(per["serial"] * 1e6, 1)
    info["per_call_us_pydantic_ai"] = round(per["pai"] * 1e6, 1)
    # The target's measure: gate + dispatch + trace writing per call, over
    # pydantic-ai's whole per-call cost. The whole loop's ratio is kept beside it.
    # Ratios are taken round by round (the sides of a round ran within a
    # second of each other, under the same load), then their median.
    slopes = {name: _slopes(s) for name, s in samples.items()}
    paired = zip(slopes["metis"], slopes["loop_only"], slopes["pai"], strict=True)
    rounds = [((m - b) / p, m / p) for m, b, p in paired]
    info["rounds"] = ROUNDS
    info["ratio_gate_dispatch_trace_over_pydantic_ai"] = round(
        statistics.median(r for r, _ in rounds), 3
    )
    info["ratio_gate_dispatch_trace_over_pydantic_ai_quartiles"] = [
        round(q, 3) for q in statistics.quantiles((r for r, _ in rounds), n=4)[::2]
    ]
    info["ratio_metis_over_pydantic_ai"] = round(statistics.median(w for _, w in rounds), 3)
    info["ratio_serial_over_four_class"] = round(per["serial"] / per["metis"], 3)
    info["target_ratio"] = 0.25
    info["dispatch_only_us_per_call_four_class"] = round(four_only * 1e6, 2)
    info["dispatch_only_us_per_call_serial"] = round(serial_only * 1e6, 2)
    info["dispatch_only_ratio_four_class_over_serial"] = round(four_only / serial_only, 3)
    # Where a metis call's time goes, as shares of its measured per-call cost.
    parts["dispatch_four_class"] = four_only
    info["breakdown_us"] = {k: round(v * 1e6, 2) for k, v in parts.items()}
    info["breakdown_share_of_metis_call"] = {
        k: round(v / per["metis"], 3) for k, v in parts.items()
    }
    trace_share = sum(v for k, v in parts.items() if k.startswith("emit_")) / per["metis"]
    info["trace_events_share_of_metis_call"] = round(trace_share, 3)
    if os.environ.get("METIS_BENCH_PROFILE"):
        info["profile_share_by_area"] = _profile_metis(LARGE)


# --- 2. four-class against serial on real-I/O batches ------------------------------------
# The paired study lives in metis_studies.dispatch (`metis study dispatch`
# writes its tables, raw pairs and figures); here it runs once per batch and
# its figures go into the benchmark's extra_info, beside the other ratios.


@pytest.mark.parametrize("batch", list(BATCHES))
def test_four_class_against_serial_on_real_io(benchmark: Any, tmp_path: Path, batch: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    result = run_batch(root, batch, PAIRS)
    benchmark.pedantic(io_run, args=(root, BATCHES[batch], "four-class", "bench"), rounds=3)
    s, b = result.stats, result.bounds
    info = benchmark.extra_info
    info["batch"] = batch
    info["pairs"] = s.pairs
    info["median_ratio_four_class_over_serial"] = round(s.median_ratio, 3)
    info["target_ratio"] = TARGET_RATIO
    info["mean_paired_diff_ms_four_minus_serial"] = round(s.mean_diff_ms, 2)
    info["bootstrap95_mean_diff_ms"] = [round(v, 2) for v in s.ci95_ms]
    info["pairs_four_class_faster"] = s.a_faster
    info["median_span_ms_four_class"] = round(s.median_a_ms, 2)
    info["median_span_ms_serial"] = round(s.median_b_ms, 2)
    info["critical_path_ms"] = round(b.critical_path_ms, 2)
    info["forced_chain_ms"] = round(b.forced_chain_ms, 2)
    info["longest_call_alone"] = [b.longest_call, round(b.longest_call_ms, 2)]
    info["makespan_over_critical_path"] = round(result.makespan_over_critical_path, 3)
    info["target_makespan_over_critical_path"] = TARGET_MAKESPAN
    info["in_process_sum_ms"] = round(b.in_process_sum_ms, 2)
    info["cores"] = b.cores
    info["batch_cpu_ms"] = round(b.batch_cpu_ms, 2)
    info["work_bound_ms"] = round(b.work_bound_ms, 2)
    info["best_possible_ratio_on_this_machine"] = round(result.best_ratio, 3)
    info["best_possible_makespan_over_critical_path"] = round(b.floor_ms / b.critical_path_ms, 3)
    info["makespan_over_floor"] = round(result.makespan_over_floor, 3)
    info["alone_ms"] = {c: round(v, 2) for c, v in zip(result.calls, result.alone_ms, strict=True)}


if __name__ == "__main__":  # a quick look without pytest: python benchmarks/bench_dispatch.py
    pytest.main([__file__, "--benchmark-enable", "-q", "-s"])
