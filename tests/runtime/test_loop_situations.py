"""Real runs that reach situations the model checks and no other workload does:
a call cut by its own time limit while its siblings go on, a run in dontAsk,
an interrupt while the final answer waits for a job, a write that completes
after an interrupt, a job ending while context is prepared or after a
cancelled batch, and a follow-up message after an answer. Each trace is
checked against the model here and by the pytest plugin (coverage)."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import LoopConfig
from metis_runtime import TraceWriter
from metis_runtime.context import ContextBudget
from metis_runtime.context import ContextController
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.providers import Message
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import Classification
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolSpec
from metis_studies.faults._harness import close_loop
from metis_trace import CallClass
from metis_trace import CancelCause
from metis_trace import Mode
from metis_trace import ToolKind
from tests.runtime.test_loop_support import FuncTool
from tests.runtime.test_loop_support import assert_conforms
from tests.runtime.test_loop_support import make_loop
from tests.runtime.test_loop_support import metis_run
from tests.runtime.test_loop_support import of_kind
from tests.runtime.test_loop_support import read
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import run_loop
from tests.runtime.test_loop_support import write_scenario


def _transitions(header: Any, events: Any) -> set[str]:
    return set(check_trace(events, header).transitions)


async def _slow(input: Any, ctx: ToolContext) -> ToolOutput:
    await asyncio.sleep(5)
    return ToolOutput("never")


async def _quick(input: Any, ctx: ToolContext) -> ToolOutput:
    await asyncio.sleep(0.05)
    return ToolOutput("quick")


async def _wait_for(
    path: Path, seen: Callable[[dict[str, Any]], bool], timeout: float = 20
) -> None:
    """Until the trace file holds an event `seen` accepts (it is written line by line)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if path.exists():
            for line in path.read_text().splitlines()[1:]:
                if line.strip() and seen(json.loads(line)):
                    return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{path}: never saw the event")
        await asyncio.sleep(0.02)


def _answered(e: dict[str, Any]) -> bool:
    return e["kind"] == "assistant" and not e["calls"]


def _write_started(e: dict[str, Any]) -> bool:  # turn 1's second call started
    return e["kind"] == "effect_start" and e["occ"] == "1.1"


def _loop(
    tmp: Path,
    script: Sequence[Any],
    *,
    tools: Sequence[Tool] = (),
    config: LoopConfig | None = None,
    **kwargs: Any,
) -> tuple[AgentLoop, Path]:
    """A loop with a journal (so it can be resumed) and the given hooks."""
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    trace_path = tmp / "trace.jsonl"
    loop = make_loop(
        list(script),
        ws,
        trace_path,
        extra_tools=tools,
        config=config,
        env={"PATH": "/usr/bin:/bin"},
        journal_path=tmp / "trace.jsonl.journal",
        dispatcher=FourClassDispatcher(),
        **kwargs,
    )
    return loop, trace_path


def _stop_when(
    loop: AgentLoop,
    trace_path: Path,
    task: str,
    seen: Callable[[dict[str, Any]], bool],
    settle: float = 0,
) -> tuple[Any, list[Any]]:
    """Run `task`, and once the trace holds an event `seen` accepts (and
    `settle` seconds more), cancel the run's task as Ctrl-C does; the trace,
    checked against the model."""

    async def main() -> None:
        running = asyncio.ensure_future(loop.run(task))
        await _wait_for(trace_path, seen)
        await asyncio.sleep(settle)
        loop.signal_received(signal.SIGINT)  # Ctrl-C: the interrupt's source (SCHED-5)
        running.cancel()
        await asyncio.wait((running,))

    asyncio.run(main())
    close_loop(loop)
    header, events = read(trace_path)
    assert_conforms(header, events)
    return header, events


def _resume(tmp: Path, script: Sequence[Any], tools: Sequence[Tool] = ()) -> Any:
    trace_path = tmp / "trace.jsonl"
    trace = TraceWriter(trace_path)
    journal, state = Journal.open(tmp / "trace.jsonl.journal", fsync=False)
    loop = make_loop(
        list(script), tmp / "ws", trace_path, trace=trace, journal=journal, extra_tools=tools
    )
    try:
        return asyncio.run(loop.resume(state))
    finally:
        close_loop(loop)


def test_a_call_past_its_limit_alone_is_cancelled(tmp_path: Path) -> None:
    """SCHED-5 with a cause: the timeout names the call it covers; its sibling
    finishes, and the run goes on."""
    script = [
        (ToolUseBlock("c1", "slow", {}), ToolUseBlock("c2", "quick", {})),
        (TextBlock("done"),),
    ]
    run = run_loop(
        script,
        tmp_path,
        extra_tools=(FuncTool("slow", _slow), FuncTool("quick", _quick)),
        config=LoopConfig(call_timeout=0.3),
    )
    assert run.result.status.value == "completed"
    (cancel,) = of_kind(run.events, "cancel")
    assert cancel.cause is CancelCause.TIMEOUT and cancel.occs == ("1.0",)
    assert cancel.limit_s == 0.3
    assert results_by_occ(run.events)["1.0"][0] == "cancelled"
    assert results_by_occ(run.events)["1.1"] == ("ok", "quick")
    assert check_trace(run.events, run.header).checks["SCHED-5"] >= 2


def test_dontask_denies_what_it_would_ask(tmp_path: Path) -> None:
    run = run_loop(
        [(ToolUseBlock("c1", "bash", {"command": "touch x"}),), (TextBlock("no"),)],
        tmp_path,
        mode=Mode.DONT_ASK,
    )
    (decision,) = of_kind(run.events, "decision")
    assert decision.decision.value == "deny" and decision.facts.mode is Mode.DONT_ASK
    assert not (run.workspace / "x").exists()
    assert check_trace(run.events, run.header).checks["PERM-5"] == 1


def _job(seconds: float) -> ToolUseBlock:
    return ToolUseBlock("bg", "bash", {"command": f"sleep {seconds}", "background": True})


def test_an_interrupt_while_the_answer_waits_for_a_job(tmp_path: Path) -> None:
    """Interrupted after the final answer, while a background job still runs
    (`answered--interrupt`): the job ends cancelled with the process, and a
    resume asks the model again and completes."""
    script = [(_job(30),), (TextBlock("waiting for the job"),)]
    loop, trace_path = _loop(tmp_path, script, config=LoopConfig(job_wait=60))

    header, events = _stop_when(loop, trace_path, "start a job, then answer", _answered)
    assert "answered--interrupt" in _transitions(header, events)
    result = _resume(tmp_path, [(TextBlock("done after all"),)])
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)


class _FinishingWrite(Tool):
    """An edit that, once started, finishes its write even when cancelled
    (a transaction that must not be left half done): it commits after the
    interrupt, and the resumed run answers it from the journal."""

    spec = ToolSpec("finish_write", "write a file, all or nothing", {"type": "object"})

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EDIT

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        path = ctx.workspace / "ledger.txt"
        return Classification(CallClass.QUEUE, f"file:{path}", ToolKind.EDIT, (path,))

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        async def write() -> None:
            await asyncio.sleep(0.3)
            (ctx.workspace / "ledger.txt").write_text("balanced\n")

        work = asyncio.ensure_future(write())
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            await work  # finish it: half a ledger is worse than a late one
        return ToolOutput("written")


def test_a_write_that_completes_after_the_interrupt_is_answered_on_resume(
    tmp_path: Path,
) -> None:
    """`interrupted--commit`: the run is stopped while a read and the write
    run; the read ends cancelled (the interrupt), the write commits after it.
    The resume answers the write from the journal (never running it again)
    and stubs the read."""
    script = [
        (ToolUseBlock("c1", "slow", {}), ToolUseBlock("c2", "finish_write", {})),
    ]
    tools = (FuncTool("slow", _slow), _FinishingWrite())
    loop, trace_path = _loop(tmp_path, script, tools=tools)

    header, events = _stop_when(loop, trace_path, "read and write", _write_started, settle=0.05)
    stopped = [e.kind for e in events].index("interrupt")
    assert [(e.kind, getattr(e, "occ", "")) for e in events[stopped + 1 :]] == [
        ("effect_end", "1.0"),  # the read, cancelled: what recorded the interrupt
        ("commit", "1.1"),  # the write finished after it
        ("effect_end", "1.1"),
    ]
    assert (tmp_path / "ws" / "ledger.txt").read_text() == "balanced\n"
    result = _resume(tmp_path, [(TextBlock("done"),)], tools)
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)
    report = check_trace(events, header)
    assert {"interrupted--commit", "resumed--result"} <= set(report.transitions)
    assert report.checks["RETRY-1"] == 1 and report.checks["RETRY-2"] >= 2
    (repair,) = of_kind(events, "repair")
    assert repair.stubbed == ("1.0",) and repair.unknown == ()  # the Safe read: not run


def test_a_job_ends_while_the_context_is_prepared(tmp_path: Path) -> None:
    """`preparing--job_done`: a background job finishes while the next turn's
    context control runs (its compaction waits on a slow summary)."""

    async def slow_summary(messages: Sequence[Message]) -> str:
        await asyncio.sleep(1.0)
        return "a job was started, two commands echoed"

    # Only compaction, and early: the third turn's context is over it.
    never = 10**9
    budget = ContextBudget(
        window=400,
        prune_at=never,
        snip_at=never,
        offload_at=never,
        collapse_at=never,
        compaction_at=150,
        recent=1,
    )
    controller = ContextController(budget, summarizer=slow_summary)
    echo = ToolUseBlock("c2", "bash", {"command": "echo " + "x" * 400})
    script = [(_job(0.6), echo), (echo,), (TextBlock("done"),)]
    loop, trace_path = _loop(tmp_path, script, config=LoopConfig(job_wait=10))
    loop.context_hook = controller.hook(loop.trace)
    result = asyncio.run(loop.run("run a job"))
    close_loop(loop)
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert [e.step for e in of_kind(events, "compaction")] == ["compaction"]
    assert "preparing--job_done" in _transitions(header, events)


def test_a_job_ends_after_a_cancelled_batch(tmp_path: Path) -> None:
    """`ready--job_done`: the user cancels during a batch; its results go back,
    and the run's end cancels the still running job."""
    script = [(_job(30), ToolUseBlock("c2", "slow", {})), (TextBlock("never"),)]
    loop, trace_path = _loop(tmp_path, script, tools=(FuncTool("slow", _slow),))

    async def main() -> Any:
        task = asyncio.ensure_future(loop.run("a job and a slow read"))
        await _wait_for(trace_path, _write_started)
        loop.cancel("the user pressed stop")
        return await task

    result = asyncio.run(main())
    close_loop(loop)
    assert result.status.value == "cancelled"
    header, events = read(trace_path)
    assert_conforms(header, events)
    (cancel,) = of_kind(events, "cancel")
    assert cancel.cause is CancelCause.USER and cancel.occs == ()
    assert "ready--job_done" in _transitions(header, events)


def test_a_follow_up_after_the_answer_starts_another_turn(tmp_path: Path) -> None:
    """`answered--turn_start`: a message that arrived while the agent answered
    (a child's queued message) is not lost: it starts the next turn, and a
    resume keeps it in the history."""
    queued = ["and also list the files"]

    async def follow_up() -> str | None:
        return queued.pop() if queued else None

    script = [(TextBlock("first answer"),), (ToolUseBlock("c1", "ls", {}),), (TextBlock("done"),)]
    loop, trace_path = _loop(tmp_path, script, follow_up=follow_up)
    result = asyncio.run(loop.run("answer, then follow up"))
    close_loop(loop)
    assert result.status.value == "completed" and result.text == "done"
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert "answered--turn_start" in _transitions(header, events)
    second = loop.provider.requests[1].messages  # type: ignore[attr-defined]
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[-1].content[0].text == "and also list the files"  # type: ignore[union-attr]


def _request_seen(e: dict[str, Any]) -> bool:
    return e["kind"] == "request"


def test_an_interrupt_while_the_model_streams(tmp_path: Path) -> None:
    """`streaming--interrupt`: stopped while the provider's answer is still
    coming; the resume asks again and completes."""
    never = asyncio.Event()

    async def stalled(request: Any, turn: int) -> Any:
        await never.wait()  # the answer never comes: the run is stopped first
        return (TextBlock("never"),)

    loop, trace_path = _loop(tmp_path, [])
    loop.provider = ScriptedProvider(stalled)

    header, events = _stop_when(loop, trace_path, "answer slowly", _request_seen)
    assert "streaming--interrupt" in _transitions(header, events)
    assert _resume(tmp_path, [(TextBlock("done"),)]).status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)


def test_an_interrupt_while_the_context_is_prepared(tmp_path: Path) -> None:
    """`preparing--interrupt`: stopped while context control runs."""
    never = asyncio.Event()

    async def stalled_hook(session: Any, turn: int) -> None:
        await never.wait()

    loop, trace_path = _loop(tmp_path, [(TextBlock("never"),)], context_hook=stalled_hook)

    header, events = _stop_when(
        loop, trace_path, "prepare slowly", lambda e: e["kind"] == "turn_start"
    )
    assert "preparing--interrupt" in _transitions(header, events)


def test_a_job_ends_while_the_model_streams(tmp_path: Path) -> None:
    """`streaming--job_done`: a background job finishes while the next
    answer is being streamed."""

    async def script(request: Any, turn: int) -> Any:
        if turn == 0:
            return (_job(0.2),)
        await asyncio.sleep(1.5)  # the job ends meanwhile
        return (TextBlock("done"),)

    loop, trace_path = _loop(tmp_path, [], config=LoopConfig(job_wait=10))
    loop.provider = ScriptedProvider(script)
    result = asyncio.run(loop.run("run a job"))
    close_loop(loop)
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert "streaming--job_done" in _transitions(header, events)


def test_a_process_killed_between_turns_is_resumed_from_ready(tmp_path: Path) -> None:
    """`ready--interrupt`: `metis run` killed (SIGKILL, a fail point) after
    turn 1's results were sent and before turn 2 started; `--resume` records
    the interrupt where the trace stopped, in `ready`, and completes."""
    trace = tmp_path / "run" / "trace.jsonl"
    ws = ["--workspace", str(tmp_path / "ws"), "--mode", "acceptEdits", "--headless"]
    killed = metis_run(*ws, "--trace", str(trace), env={"METIS_FAILPOINT": "trace:turn_start:2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    header, events = read(trace)
    assert events[-1].kind == "results_sent"
    resumed = metis_run("--resume", "--trace", str(trace))
    assert resumed.returncode == 0, resumed.stderr
    header, events = read(trace)
    assert_conforms(header, events)
    assert "ready--interrupt" in _transitions(header, events)


def test_metis_run_call_timeout_cancels_the_slow_call_alone(tmp_path: Path) -> None:
    """`metis run --call-timeout`: a bash call past the limit is cancelled (a
    timeout cancel naming it), its sibling finishes, the run completes."""
    turns = [
        [
            {"tool": "bash", "id": "slow", "input": {"command": "sleep 30"}},
            {"tool": "bash", "id": "quick", "input": {"command": "echo quick"}},
        ],
        [{"text": "done"}],
    ]
    scenario = write_scenario(tmp_path / "s.yaml", turns)
    trace = tmp_path / "run" / "trace.jsonl"
    ws = ["--workspace", str(tmp_path / "ws"), "--mode", "bypassPermissions", "--headless"]
    args = [*ws, "--scenario", str(scenario), "--trace", str(trace), "--call-timeout", "1"]
    done = metis_run(*args)
    assert done.returncode == 0, done.stderr
    header, events = read(trace)
    assert_conforms(header, events)
    (cancel,) = of_kind(events, "cancel")
    assert cancel.cause is CancelCause.TIMEOUT and cancel.occs == ("1.0",)
    results = results_by_occ(events)
    assert results["1.0"][0] == "cancelled" and results["1.1"][0] == "ok"
    bad = metis_run(*args, "--call-timeout", "0")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "metis run: error: Invalid value for '--call-timeout': 0.0 is not in the range x>0."
    ]
