"""The agent loop with scripted providers: every trace must pass check_trace."""

from __future__ import annotations

import asyncio
import errno
import signal
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import metis_runtime
from metis_runtime import AgentLoop
from metis_runtime import LoopConfig
from metis_runtime import PassThroughGate
from metis_runtime import ProviderError
from metis_runtime.dispatch import AskAnswer
from metis_runtime.dispatch import GateDecision
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import AssistantMessage
from metis_runtime.providers import Block
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ServerToolBlock
from metis_runtime.providers import StreamRepairNote
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import anthropic_request_body
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind
from tests._exports import assert_all_lists_the_public_names
from tests.runtime.test_loop_support import FuncTool
from tests.runtime.test_loop_support import kinds
from tests.runtime.test_loop_support import of_kind
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import run_loop


def _answer(text: str = "done") -> list[Any]:
    return [TextBlock(text)]


def _workspace(tmp_path: Path, files: Mapping[str, str] | None = None) -> Path:
    """The run's workspace, tmp_path/ws, holding `files` (name: text)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in (files or {}).items():
        (ws / name).write_text(text)
    return ws


def test_public_names_equal_all() -> None:
    for name in metis_runtime.__all__:  # a lazy package (PEP 562) binds names on first use
        getattr(metis_runtime, name)
    assert_all_lists_the_public_names(metis_runtime)


def test_parallel_calls_close_in_call_order(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, {"a.txt": "alpha\n", "b.txt": "bravo\n"})
    script = [
        [
            TextBlock("reading"),
            ToolUseBlock("t1", "read", {"path": "a.txt"}),
            ToolUseBlock("t2", "read", {"path": "b.txt"}),
            ToolUseBlock("t3", "write", {"path": "c.txt", "content": "charlie"}),
        ],
        _answer(),
    ]
    run = run_loop(script, tmp_path, mode=Mode.ACCEPT_EDITS)
    assert run.result.status.value == "completed" and run.result.text == "done"
    sent = of_kind(run.events, "results_sent")
    assert [s.occs for s in sent] == [("1.0", "1.1", "1.2")]
    assert (ws / "c.txt").read_text() == "charlie"
    results = run.provider.requests[1].messages[-1].content
    assert [b.tool_use_id for b in results if isinstance(b, ToolResultBlock)] == ["t1", "t2", "t3"]
    assert "alpha" in results[0].content and "bravo" in results[1].content  # type: ignore[union-attr]
    # the write committed; the reads did not
    ends = {e.occ: e.committed for e in of_kind(run.events, "effect_end")}
    assert ends == {"1.0": False, "1.1": False, "1.2": True}
    assert run.observer.lines[:2] == ["start 1.0 read", "end 1.0 read ok"]


def test_duplicate_ids_within_a_message_and_across_turns(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.txt": "alpha\n"})
    script = [
        [ToolUseBlock("dup", "read", {"path": "a.txt"}), ToolUseBlock("dup", "ls", {})],
        [ToolUseBlock("dup", "read", {"path": "a.txt"})],
        _answer(),
    ]
    run = run_loop(script, tmp_path)
    assert set(results_by_occ(run.events)) == {"1.0", "1.1", "2.0"}
    assert all(r[0] == "ok" for r in results_by_occ(run.events).values())
    turn1 = run.provider.requests[1].messages[-1].content
    assert [b.tool_use_id for b in turn1 if isinstance(b, ToolResultBlock)] == ["dup", "dup"]
    assert [e.call_id for e in of_kind(run.events, "result")] == ["dup"] * 3


def test_unknown_tool_and_malformed_arguments_get_error_results_without_effects(
    tmp_path: Path,
) -> None:
    script = [
        [
            ToolUseBlock("u1", "no_such_tool", {"x": 1}),
            ToolUseBlock("u2", "read", {}, input_error="Expecting value at char 0"),
            ToolUseBlock("u3", "read", {"path": 7}),  # wrong type: the classifier refuses it
            ToolUseBlock("u4", "ls", {}),
        ],
        _answer(),
    ]
    for mode in (Mode.BYPASS, Mode.DEFAULT):
        run = run_loop(script, tmp_path / mode.value, mode=mode, route=Route.HEADLESS)
        res = results_by_occ(run.events)
        assert res["1.0"][0] == "error" and "unknown tool 'no_such_tool'" in res["1.0"][1]
        assert res["1.1"][0] == "error" and "not a JSON object" in res["1.1"][1]
        assert res["1.2"][0] == "error" and "path" in res["1.2"][1]
        assert res["1.3"][0] == "ok"
        assert [e.occ for e in of_kind(run.events, "effect_start")] == ["1.3"]
        assert len(of_kind(run.events, "decision")) == 4  # every call is decided


def test_a_tool_that_raises_is_an_error_result_and_siblings_still_run(tmp_path: Path) -> None:
    async def boom(input: ToolInput, ctx: ToolContext) -> ToolOutput:
        raise RuntimeError("kaboom")

    ran: list[str] = []

    async def fine(input: ToolInput, ctx: ToolContext) -> ToolOutput:
        ran.append("fine")
        return ToolOutput("fine")

    script = [
        [ToolUseBlock("a", "boom", {}), ToolUseBlock("b", "fine", {})],
        _answer(),
    ]
    run = run_loop(script, tmp_path, extra_tools=[FuncTool("boom", boom), FuncTool("fine", fine)])
    res = results_by_occ(run.events)
    assert res["1.0"] == ("error", "RuntimeError: kaboom")
    assert res["1.1"] == ("ok", "fine") and ran == ["fine"]
    assert run.result.status.value == "completed"


class _Answering:
    """A gate that answers some calls itself (`own`), else passes through."""

    def __init__(self, inner: PassThroughGate, name: str) -> None:
        self.inner = inner
        self.name = name

    def own(self, tool: str, kind: ToolKind, paths: Sequence[Path]) -> GateDecision | None:
        raise NotImplementedError

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[Path],
        command: str | None,
    ) -> GateDecision:
        answer = self.own(tool, kind, paths)
        return self.inner.decide(tool, input, kind, paths, command) if answer is None else answer

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: GateDecision
    ) -> AskAnswer:
        return await self.inner.resolve_ask(occ, tool, input, decision)


class _DenyTool(_Answering):
    """A gate that denies the tool `name` by a deny rule, else passes through."""

    def own(self, tool: str, kind: ToolKind, paths: Sequence[Path]) -> GateDecision | None:
        if tool != self.name:
            return None
        rule = RuleRef(behavior=RuleBehavior.DENY, source=Source.CLI, pattern=tool)
        facts = Facts(mode=self.inner.mode, kind=kind, rules=(rule,))
        return GateDecision(Decision.DENY, Stage.DENY_RULE, rule, facts, self.inner.route)


class _CannotResolve(_Answering):
    """A gate whose path resolution fails for the file `name`, as realpath does
    while a symlink is swapped under it (EINVAL from readlink)."""

    def own(self, tool: str, kind: ToolKind, paths: Sequence[Path]) -> GateDecision | None:
        if any(p.name == self.name for p in paths):
            raise OSError(errno.EINVAL, "Invalid argument", str(paths[0]))
        return None


def test_a_path_the_gate_cannot_resolve_refuses_its_call_not_the_run(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, {"notes.txt": "notes\n", "other.txt": "other\n"})
    script = [
        [
            ToolUseBlock("a", "read", {"path": "notes.txt"}),
            ToolUseBlock("b", "read", {"path": "other.txt"}),
        ],
        _answer(),
    ]
    gate = _CannotResolve(PassThroughGate(Mode.BYPASS, ws), "notes.txt")
    run = run_loop(script, tmp_path, gate=gate)  # conforms, and ends completed
    res = results_by_occ(run.events)
    assert res["1.0"][0] == "error" and "cannot decide the call: OSError" in res["1.0"][1]
    assert res["1.1"][0] == "ok" and run.result.status.value == "completed"
    # decided as what cannot run (the most dangerous kind, no paths), never run
    decision = of_kind(run.events, "decision")[0]
    assert decision.facts.kind is ToolKind.EXEC and not decision.reads
    assert not [e for e in run.events if e.kind == "effect_start" and e.occ == "1.0"]


def test_denial_mid_batch_denies_only_its_call(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    script = [
        [
            ToolUseBlock("a", "write", {"path": "one.txt", "content": "1"}),
            ToolUseBlock("b", "bash", {"command": "touch two.txt"}),
            ToolUseBlock("c", "write", {"path": "three.txt", "content": "3"}),
        ],
        _answer(),
    ]
    gate = _DenyTool(PassThroughGate(Mode.BYPASS, ws), "bash")
    run = run_loop(script, tmp_path, gate=gate)
    res = results_by_occ(run.events)
    assert [res[o][0] for o in ("1.0", "1.1", "1.2")] == ["ok", "denied", "ok"]
    assert "deny_rule" in res["1.1"][1]
    assert (ws / "one.txt").exists() and (ws / "three.txt").exists()
    assert not (ws / "two.txt").exists()


def test_real_gate_headless_ask_resolves_to_the_default_at_once(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    gate = Gate(Policy(), Mode.DEFAULT, ws, Route.HEADLESS)
    script = [
        [
            ToolUseBlock("a", "write", {"path": "x.txt", "content": "x"}),
            ToolUseBlock("b", "ls", {}),
            ToolUseBlock("c", "bash", {"command": "echo hi"}),
        ],
        _answer(),
    ]
    run = run_loop(script, tmp_path, gate=gate, mode=Mode.DEFAULT, route=Route.HEADLESS)
    ks = kinds(run.events)
    first = ks.index("decision")
    assert ks[first : first + 2] == ["decision", "ask_resolved"]  # nothing in between (PERM-6)
    asked = of_kind(run.events, "ask_resolved")[0]
    assert (asked.approved, asked.resolver) == (False, "headless-default")
    res = results_by_occ(run.events)
    assert res["1.0"][0] == "denied" and res["1.1"][0] == "ok" and res["1.2"][0] == "ok"
    assert not (ws / "x.txt").exists()


def test_interactive_ask_approved_runs_the_call(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    asked: list[str] = []

    async def ask(occ: str, tool: str, input: Mapping[str, Any], decision: Any) -> bool:
        asked.append(occ)
        return tool == "write"

    gate = PassThroughGate(Mode.DEFAULT, ws, ask=ask)
    script = [
        [
            ToolUseBlock("a", "write", {"path": "x.txt", "content": "x"}),
            ToolUseBlock("b", "bash", {"command": "touch y.txt"}),
        ],
        _answer(),
    ]
    run = run_loop(script, tmp_path, gate=gate, mode=Mode.DEFAULT)
    assert asked == ["1.0", "1.1"]
    ks = kinds(run.events)
    # every ask is settled before the first effect (AUTH-2)
    assert max(i for i, k in enumerate(ks) if k == "ask_resolved") < ks.index("effect_start")
    res = results_by_occ(run.events)
    assert (res["1.0"][0], res["1.1"][0]) == ("ok", "denied")
    assert (ws / "x.txt").exists() and not (ws / "y.txt").exists()


def test_out_of_scope_path_is_decided_at_stage_scope(tmp_path: Path) -> None:
    _workspace(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret-ish\n")
    script = [[ToolUseBlock("a", "read", {"path": str(outside)})], _answer()]
    run = run_loop(script, tmp_path, mode=Mode.DEFAULT, route=Route.HEADLESS)
    decision = of_kind(run.events, "decision")[0]
    assert (decision.decision.value, decision.stage, decision.facts.in_scope) == (
        "ask",
        "scope",
        False,
    )
    assert results_by_occ(run.events)["1.0"][0] == "denied"


def test_cancel_mid_batch_cancels_the_running_call_and_skips_the_rest(tmp_path: Path) -> None:
    holder: dict[str, AgentLoop] = {}
    after: list[str] = []

    async def cancelling(input: ToolInput, ctx: ToolContext) -> ToolOutput:
        holder["loop"].cancel("user pressed escape")
        await asyncio.sleep(30)
        return ToolOutput("never")

    async def later(input: ToolInput, ctx: ToolContext) -> ToolOutput:
        after.append("ran")
        return ToolOutput("later")

    tools = [
        FuncTool("first", later),
        FuncTool("slow", cancelling, cls=CallClass.EXCLUSIVE, kind=ToolKind.EXEC),
        FuncTool("third", later),
    ]
    script = [
        [
            ToolUseBlock("a", "first", {}),
            ToolUseBlock("b", "slow", {}),
            ToolUseBlock("c", "third", {}),
        ],
        _answer("never asked"),
    ]

    async def grab(loop: AgentLoop) -> None:
        holder["loop"] = loop

    run = run_loop(script, tmp_path, extra_tools=tools, during=grab)
    res = results_by_occ(run.events)
    assert [res[o][0] for o in ("1.0", "1.1", "1.2")] == ["ok", "cancelled", "skipped"]
    assert after == ["ran"]
    assert run.result.status.value == "cancelled"
    assert kinds(run.events)[-2:] == ["results_sent", "run_end"]
    assert len(run.provider.requests) == 1
    cancel = of_kind(run.events, "cancel")[0]
    assert cancel.reason == "user pressed escape"


def test_cancel_while_streaming_ends_the_run_cancelled(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow_answer(request: ModelRequest, turn: int) -> list[Any]:
        started.set()
        await asyncio.sleep(30)
        return _answer()

    async def cancel_soon(loop: AgentLoop) -> None:
        await started.wait()
        loop.cancel("stop")

    run = run_loop(slow_answer, tmp_path, during=cancel_soon)
    assert run.result.status.value == "cancelled"
    # `cancel` is the API call that stops the run: recorded, and named by the interrupt.
    assert kinds(run.events) == ["turn_start", "request", "stop_request", "interrupt", "run_end"]
    assert run.events[2].seq in run.events[3].causes


def test_a_background_bash_job_hands_shakes_then_completes(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    script = [
        [
            ToolUseBlock(
                "bg", "bash", {"command": "sleep 0.2; echo done > bg.txt", "background": True}
            )
        ],
        _answer(),
    ]
    run = run_loop(script, tmp_path)
    ks = kinds(run.events)
    assert "handshake" in ks and "job_done" in ks
    assert ks.index("handshake") < ks.index("job_done") < ks.index("run_end")
    hs = of_kind(run.events, "handshake")[0]
    done = of_kind(run.events, "job_done")[0]
    assert (done.job, done.occ, done.outcome.value) == (hs.job, "1.0", "ok")
    assert results_by_occ(run.events)["1.0"] == ("ok", f"started background job {hs.job}")
    assert (ws / "bg.txt").read_text() == "done\n"


def test_a_finished_background_job_is_reported_to_the_model(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)

    async def script(request: ModelRequest, turn: int) -> list[Any]:
        if turn == 0:
            return [ToolUseBlock("bg", "bash", {"command": "echo job-output", "background": True})]
        if turn == 1:
            while not (ws / "ready").exists():
                await asyncio.sleep(0.01)
            return [ToolUseBlock("w", "bash", {"command": "true"})]
        return _answer()

    async def mark(loop: AgentLoop) -> None:
        # the job ends soon after the first batch; let the second turn go on then
        while not of_done(loop):
            await asyncio.sleep(0.01)
        (ws / "ready").touch()

    def of_done(loop: AgentLoop) -> bool:
        return bool(loop._notes) or len(loop.session) > 3

    run = run_loop(script, tmp_path, during=mark)
    last_request = run.provider.requests[2].messages
    texts = [
        b.text
        for m in last_request
        for b in m.content
        if isinstance(b, TextBlock) and "job-" in b.text
    ]
    assert any("job-output" in t for t in texts)


def test_max_turns_ends_the_run_failed_and_closed(tmp_path: Path) -> None:
    def forever(request: ModelRequest, turn: int) -> list[Any]:
        return [ToolUseBlock(f"t{turn}", "ls", {})]

    run = run_loop(forever, tmp_path, config=LoopConfig(max_turns=3))
    assert run.result.status.value == "failed" and run.result.turns == 3
    assert "limit of 3 turns" in run.result.error
    assert kinds(run.events)[-2:] == ["results_sent", "run_end"]
    assert of_kind(run.events, "run_end")[0].status.value == "failed"


def test_a_provider_error_ends_the_run_failed(tmp_path: Path) -> None:
    def broken(request: ModelRequest, turn: int) -> list[Any]:
        if turn == 0:
            return [ToolUseBlock("a", "ls", {})]
        raise ProviderError("replay exhausted")

    run = run_loop(broken, tmp_path)
    assert run.result.status.value == "failed" and "replay exhausted" in run.result.error
    assert kinds(run.events)[-2:] == ["interrupt", "run_end"]


def test_stream_repairs_are_recorded_before_the_assistant_event(tmp_path: Path) -> None:
    message = AssistantMessage(
        "m1",
        (TextBlock("fixed"),),
        "end_turn",
        repairs=(StreamRepairNote("missing content_block_stop", "closed the block"),),
    )
    run = run_loop([message], tmp_path)
    assert kinds(run.events) == [
        "turn_start",
        "request",
        "stream_repair",
        "assistant",
        "run_end",
    ]
    repair = of_kind(run.events, "stream_repair")[0]
    assert repair.problem == "missing content_block_stop"


def test_cancelling_the_run_task_records_an_interrupt_and_stays_resumable(
    tmp_path: Path,
) -> None:
    started = asyncio.Event()

    async def wait_forever(input: ToolInput, ctx: ToolContext) -> ToolOutput:
        started.set()
        await asyncio.sleep(30)
        return ToolOutput("never")

    from tests.runtime.test_loop_support import assert_conforms
    from tests.runtime.test_loop_support import make_loop
    from tests.runtime.test_loop_support import read

    ws = _workspace(tmp_path)
    loop = make_loop(
        [[ToolUseBlock("a", "wait", {})], _answer()],
        ws,
        tmp_path / "t.jsonl",
        extra_tools=[FuncTool("wait", wait_forever, cls=CallClass.EXCLUSIVE, kind=ToolKind.EXEC)],
    )

    async def main() -> None:
        task = asyncio.ensure_future(loop.run("x"))
        await started.wait()
        loop.signal_received(signal.SIGINT)  # Ctrl-C: the interrupt's source (SCHED-5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    loop.trace.close()
    header, events = read(tmp_path / "t.jsonl")
    assert_conforms(header, events)
    assert kinds(events)[-4:] == ["effect_start", "signal", "interrupt", "effect_end"]
    assert of_kind(events, "effect_end")[0].outcome.value == "cancelled"
    assert "result" not in kinds(events)


def test_timestamps_never_decrease_and_causes_point_back(tmp_path: Path) -> None:
    script = [[ToolUseBlock("a", "ls", {}), ToolUseBlock("b", "ls", {})], _answer()]
    run = run_loop(script, tmp_path)
    ts = [e.t for e in run.events]
    assert ts == sorted(ts)
    assert [e.seq for e in run.events] == list(range(len(run.events)))
    assert all(c < e.seq for e in run.events for c in e.causes)
    sent = of_kind(run.events, "results_sent")[0]
    assert set(sent.causes) == {e.seq for e in of_kind(run.events, "result")}


_SEARCH = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
           "input": {"query": "metis"}}  # fmt: skip
_FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
          "content": [{"type": "web_search_result", "url": "https://example.org",
                       "title": "Example", "encrypted_content": "EvoP", "page_age": None}]}  # fmt: skip


def test_server_tool_and_redacted_blocks_are_kept_but_never_dispatched(tmp_path: Path) -> None:
    turn1: list[Block] = [
        ThinkingBlock("search, then list", "sig-1"),
        RedactedThinkingBlock("EmwKAhgB=="),
        ServerToolBlock(_SEARCH),
        ServerToolBlock(_FOUND),
        TextBlock("Found it; listing."),
        ToolUseBlock("t1", "ls", {}),
    ]
    run = run_loop([turn1, _answer()], tmp_path)
    assert run.result.status.value == "completed" and run.result.text == "done"
    # Only our call is a call: one occurrence, one effect, one result.
    (assistant, _) = of_kind(run.events, "assistant")
    assert [c.call_id for c in assistant.calls] == ["t1"]
    assert [e.occ for e in of_kind(run.events, "effect_start")] == ["1.0"]
    history = run.provider.requests[1].messages
    assert history[1] == Message("assistant", tuple(turn1))  # kept whole, in order
    results = history[2].content
    assert [b.tool_use_id for b in results if isinstance(b, ToolResultBlock)] == ["t1"]
    assert not any(isinstance(b, TextBlock) and "srvtoolu" in b.text for b in results)
    sent = anthropic_request_body(run.provider.requests[1], "m")["messages"][1]["content"]
    assert [b["type"] for b in sent] == [
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "text",
        "tool_use",
    ]
    assert sent[1] == {"type": "redacted_thinking", "data": "EmwKAhgB=="}
    assert (sent[2], sent[3]) == (_SEARCH, _FOUND)


def test_a_turn_of_server_tools_only_ends_the_run(tmp_path: Path) -> None:
    turn = [ServerToolBlock(_SEARCH), ServerToolBlock(_FOUND), TextBlock("The answer.")]
    run = run_loop([turn], tmp_path)
    assert run.result.status.value == "completed" and run.result.text == "The answer."
    assert of_kind(run.events, "effect_start") == [] and of_kind(run.events, "result") == []
    assert of_kind(run.events, "assistant")[0].calls == ()
