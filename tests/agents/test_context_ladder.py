"""The runtime context ladder (metis_runtime.context): every step keeps the
transcript provider-valid (CLOSE-8), agrees with the model, and plugs into
the loop with conforming `compaction` events."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import metis_runtime.context as context_pkg
from metis_check import Report
from metis_check import check_trace
from metis_model import _context as model
from metis_runtime import AgentLoop
from metis_runtime import PassThroughGate
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.context import PRUNED_PLACEHOLDER
from metis_runtime.context import STEP_NAMES
from metis_runtime.context import ContextBudget
from metis_runtime.context import ContextController
from metis_runtime.context import OverflowRetryProvider
from metis_runtime.context import cut_points
from metis_runtime.context import estimate_tokens
from metis_runtime.context import fold
from metis_runtime.context import offload
from metis_runtime.context import provider_summarizer
from metis_runtime.context import prune
from metis_runtime.context import snip
from metis_runtime.context import transcript_problem
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import Provider
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import builtin_tools
from metis_trace import Mode
from metis_trace import TraceEvent
from tests._exports import assert_all_lists_the_public_names
from tests.runtime.test_loop_support import read


def test_public_names_equal_all() -> None:
    assert_all_lists_the_public_names(context_pkg)
    assert STEP_NAMES == model.STEPS


# --- random conversations as the loop builds them ----------------------------------


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 6) -> tuple[Message, ...]:
    """The task, then (assistant, results) pairs: parallel calls with ids from
    a pool of three (repeated within a message and across turns), results in
    any order, then maybe a note; long outputs and thinking."""
    msgs = [Message.user("task: " + "x" * draw(st.integers(1, 50)))]
    for turn in range(1, draw(st.integers(0, max_turns)) + 1):
        blocks: list[Any] = []
        if draw(st.booleans()):
            blocks.append(ThinkingBlock("t" * draw(st.integers(1, 400))))
        if draw(st.booleans()):
            blocks.append(TextBlock(f"turn {turn}"))
        ids = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3))
        blocks += [ToolUseBlock(i, "read", {"path": f"f{turn}"}) for i in ids]
        msgs.append(Message("assistant", tuple(blocks)))
        results = [ToolResultBlock(i, "r" * draw(st.integers(0, 3000))) for i in ids]
        results = draw(st.permutations(results))
        notes = [TextBlock("[note]")] if draw(st.booleans()) else []
        msgs.append(Message("user", (*results, *notes)))
    return tuple(msgs)


def abstract(messages: Sequence[Message]) -> model.Transcript:
    """The model's view: occurrence names `<turn>.<index>` as the loop gives them."""
    out = []
    turn = 0
    for m in messages:
        blocks = []
        if m.role == "assistant":
            turn += 1
        calls = 0
        for b in m.content:
            if isinstance(b, ToolUseBlock):
                blocks.append(model.Block(model.BlockKind.CALL, 1, b.id, f"{turn}.{calls}"))
                calls += 1
            elif isinstance(b, ToolResultBlock):
                blocks.append(model.Block(model.BlockKind.RESULT, len(b.content), b.tool_use_id))
            elif isinstance(b, ThinkingBlock):
                blocks.append(model.Block(model.BlockKind.THINKING, len(b.thinking)))
            else:
                blocks.append(model.Block(model.BlockKind.TEXT, 1))
        out.append(model.Msg(m.role, tuple(blocks)))
    return tuple(out)


def _mutants(messages: Sequence[Message]) -> list[tuple[Message, ...]]:
    out = []
    for i, m in enumerate(messages):
        out.append((*messages[:i], *messages[i + 1 :]))
        for j in range(len(m.content)):
            rest = m.content[:j] + m.content[j + 1 :]
            out.append((*messages[:i], Message(m.role, rest), *messages[i + 1 :]))
    return out


@given(conversations(), st.data())
def test_validity_agrees_with_the_model(msgs: tuple[Message, ...], data: st.DataObject) -> None:
    assert transcript_problem(msgs) is None
    assert model.provider_valid(abstract(msgs)) is None
    mutant = data.draw(st.sampled_from(_mutants(msgs)))
    runtime_ok = transcript_problem(mutant) is None
    assert runtime_ok == (model.provider_valid(abstract(mutant)) is None), mutant


@given(conversations(), st.integers(0, 4))
def test_close8_prune_and_snip_keep_validity_and_shrink(
    msgs: tuple[Message, ...], recent: int
) -> None:
    for out in (prune(msgs, recent), snip(msgs, recent, 100)):
        assert transcript_problem(out.messages) is None
        assert estimate_tokens(out.messages) <= estimate_tokens(msgs)
        assert out.calls_removed == out.results_removed == ()
        assert out.taken == (out.messages != msgs)


@settings(max_examples=30)
@given(msgs=conversations(), threshold=st.integers(100, 2000))
def test_close8_offload_keeps_validity_and_the_content(
    msgs: tuple[Message, ...], threshold: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    directory = tmp_path_factory.mktemp("offload")
    out = offload(msgs, threshold, directory)
    assert transcript_problem(out.messages) is None
    originals = {b.content for m in msgs for b in m.content if isinstance(b, ToolResultBlock)}
    for m in out.messages:
        for b in m.content:
            if isinstance(b, ToolResultBlock) and b.content.startswith("[result offloaded"):
                path = Path(b.content.split(" saved to ", 1)[1].split(";", 1)[0])
                assert path.read_text(encoding="utf-8") in originals


@given(conversations(), st.integers(1, 12))
def test_close8_fold_at_every_cut_point_matches_the_model(
    msgs: tuple[Message, ...], k: int
) -> None:
    if k not in cut_points(msgs):
        with pytest.raises(ValueError, match="not right before an assistant"):
            fold(msgs, k, "summary")
        return
    out = fold(msgs, k, "summary")
    assert transcript_problem(out.messages) is None
    assert cut_points(msgs) == model.cut_points(abstract(msgs))
    expected = model.naive_cut(abstract(msgs), k)  # at a cut point: the rule's own fold
    name = {}
    turn = 0
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            turn += 1
            name[i] = turn
    assert tuple(f"{name[i]}.{j}" for i, j in out.calls_removed) == expected.calls_removed
    assert tuple(f"{name[i]}.{j}" for i, j in out.results_removed) == expected.results_removed


@settings(max_examples=40)
@given(msgs=conversations(max_turns=8), base=st.integers(0, 3000), recent=st.integers(0, 3))
def test_close8_the_controller_keeps_validity_and_removes_calls_with_results(
    msgs: tuple[Message, ...], base: int, recent: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    budget = ContextBudget(
        window=base * 2 + 1,
        prune_at=base,
        snip_at=base + 100,
        offload_at=base + 200,
        collapse_at=base + 300,
        compaction_at=base + 400,
        recent=recent,
        snip_chars=200,
        offload_chars=1500,
    )
    ctl = ContextController(budget, offload_dir=tmp_path_factory.mktemp("off"))
    prepared = asyncio.run(ctl.prepare(msgs))
    assert transcript_problem(prepared.messages) is None
    names = [s.step for s in prepared.steps]
    assert names == [n for n in STEP_NAMES if n in names]
    for s in prepared.steps:
        assert sorted(s.calls_removed) == sorted(s.results_removed)  # CLOSE-6 for its event
    if estimate_tokens(msgs) <= base:
        assert prepared.steps == () and prepared.messages == msgs


def test_prune_keeps_a_placeholder_and_recent_thinking() -> None:
    msgs = (
        Message.user("task"),
        Message("assistant", (ThinkingBlock("long thought"),)),
        Message.user("go on"),
        Message("assistant", (ThinkingBlock("recent"), TextBlock("ok"))),
    )
    out = prune(msgs, recent=1)
    assert out.messages[1].content == (TextBlock(PRUNED_PLACEHOLDER),)
    assert out.messages[3] == msgs[3]


def test_folded_occurrences_continue_the_loop_numbering() -> None:
    def turn(n: int, ids: Sequence[str]) -> list[Message]:
        return [
            Message("assistant", tuple(ToolUseBlock(i, "read", {}) for i in ids)),
            Message("user", tuple(ToolResultBlock(i, "x" * 400) for i in ids)),
        ]

    msgs = [Message.user("the task"), *turn(1, ["a", "a"]), *turn(2, ["b"]), *turn(3, ["c"])]
    budget = ContextBudget(1, 10**9, 10**9, 10**9, 10**9, 0, recent=2)  # compaction only
    ctl = ContextController(budget)
    first = asyncio.run(ctl.prepare(msgs))
    assert [s.step for s in first.steps] == ["compaction"]
    assert first.steps[0].calls_removed == ("1.0", "1.1", "2.0")
    assert first.messages[0].content[0].text.startswith("the task")  # type: ignore[union-attr]
    assert ctl.folded_turns == 2
    more = [*first.messages, *turn(4, ["d"])]
    second = asyncio.run(ctl.prepare(more))
    assert second.steps[0].calls_removed == ("3.0",)


def test_compaction_asks_the_provider_for_a_summary_and_falls_back() -> None:
    summarizer_provider = ScriptedProvider([[TextBlock("we read three files")]])
    msgs = [
        Message.user("task"),
        Message("assistant", (ToolUseBlock("a", "read", {}),)),
        Message("user", (ToolResultBlock("a", "x" * 1000),)),
        Message("assistant", (TextBlock("next"),)),
        Message.user("more"),
    ]
    budget = ContextBudget(1, 10**9, 10**9, 10**9, 10**9, 0, recent=2)
    ctl = ContextController(budget, summarizer=provider_summarizer(summarizer_provider))
    prepared = asyncio.run(ctl.prepare(msgs))
    text = prepared.messages[0].content[0].text  # type: ignore[union-attr]
    assert "we read three files" in text and text.startswith("task")
    asked = summarizer_provider.requests[0]
    assert transcript_problem(asked.messages) is None and asked.tools == ()

    async def failing(prefix: Sequence[Message]) -> str:
        raise RuntimeError("no")

    ctl2 = ContextController(budget, summarizer=failing)
    prepared2 = asyncio.run(ctl2.prepare(msgs))
    assert "earlier turn(s) were folded" in prepared2.messages[0].content[0].text  # type: ignore[union-attr]
    assert "summarizer failed" in prepared2.steps[0].detail


# --- in the loop ---------------------------------------------------------------


def _run_in_bypass(
    provider: Provider,
    ws: Path,
    tmp_path: Path,
    task: str,
    hooks: Callable[[TraceWriter], Mapping[str, Any]],
) -> tuple[RunResult, list[TraceEvent], Report]:
    """`provider` through the loop in bypass with the builtin tools in `ws` and
    the hooks `hooks(trace)` names; the result, the trace's events, its check."""
    registry = ToolRegistry(builtin_tools())
    trace_path = tmp_path / "trace.jsonl"
    trace = TraceWriter(trace_path, make_header(mode=Mode.BYPASS, tools=registry.names()))
    loop = AgentLoop(
        provider,
        registry,
        PassThroughGate(Mode.BYPASS, ws),
        ToolContext(ws, dict(os.environ), JobManager()),
        trace,
        **hooks(trace),
    )
    try:
        result = asyncio.run(loop.run(task))
    finally:
        trace.close()
    header, events = read(trace_path)
    return result, events, check_trace(events, header)


@pytest.mark.parametrize("fold", ["collapse", "compaction"])
def test_the_loop_records_each_step_and_the_trace_conforms(tmp_path: Path, fold: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(4):
        (ws / f"big{i}.txt").write_text((f"line {i} of a long file\n") * 1200)

    def script(request: ModelRequest, n: int) -> list[Any]:
        # Every request the provider sees must be valid.
        assert transcript_problem(request.messages) is None
        if n < 6:  # parallel calls sharing one id, as some providers send them
            read = ToolUseBlock(f"t{n}", "read", {"path": f"big{n % 4}.txt"})
            return [ThinkingBlock("thinking " * 200), read, ToolUseBlock(f"t{n}", "ls", {})]
        return [TextBlock("done")]

    provider = ScriptedProvider(script)
    # Results of ~9000 tokens against a 12000-token window: prune, snip and
    # offload each turn; then one fold step always runs (the other never).
    folds = {"collapse_at": 10**9, "compaction_at": 10**9, f"{fold}_at": 0}
    budget = ContextBudget.for_window(12000, recent=1, snip_chars=300, offload_chars=4000, **folds)
    ctl = ContextController(
        budget,
        summarizer=provider_summarizer(ScriptedProvider(lambda r, n: [TextBlock("summary")])),
        offload_dir=tmp_path / "offload",
    )
    result, events, report = _run_in_bypass(
        provider, ws, tmp_path, "read the big files", lambda t: {"context_hook": ctl.hook(t)}
    )
    assert result.status.value == "completed"
    assert report.ok, report.first
    steps = [e.step for e in events if e.kind == "compaction"]
    assert set(steps) == {"prune", "snip", "offload", fold}, steps
    assert report.checks["CLOSE-6"] == len(steps)
    cuts = [e for e in events if e.kind == "compaction" and e.calls_removed]
    assert cuts and all(set(e.calls_removed) == set(e.results_removed) for e in cuts)
    assert all(estimate_tokens(r.messages) < 12000 for r in provider.requests)


# --- overflow: one retry -------------------------------------------------------


class _Overflowing:
    name = "overflowing"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.requests: list[ModelRequest] = []
        self.inner = ScriptedProvider(lambda r, n: [TextBlock("ok")])

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            return self._fail()
        return self.inner.stream(request)

    async def _fail(self) -> AsyncIterator[StreamEvent]:
        raise ContextOverflowError("prompt is too long")
        yield  # pragma: no cover - makes this an async generator


def _long_conversation() -> tuple[Message, ...]:
    msgs: list[Message] = [Message.user("task")]
    for n in range(3):
        msgs += [
            Message("assistant", (ToolUseBlock(f"c{n}", "read", {}),)),
            Message("user", (ToolResultBlock(f"c{n}", "x" * 500),)),
        ]
    return tuple(msgs)


class _OverflowOn:
    """`inner`, except that its `nth` request is refused as too long (once)."""

    def __init__(self, nth: int, inner: ScriptedProvider) -> None:
        self.name = f"overflow-on-{nth}"
        self.nth = nth
        self.inner = inner
        self.seen = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.seen += 1
        if self.seen == self.nth:
            return _Overflowing(failures=1)._fail()
        return self.inner.stream(request)


async def _drain(provider: Any, request: ModelRequest) -> list[StreamEvent]:
    return [e async for e in provider.stream(request)]


def test_an_overflow_is_retried_once_with_everything_but_the_last_turn_folded() -> None:
    inner = _Overflowing(failures=1)
    seen: list[Any] = []
    wrapped = OverflowRetryProvider(inner, ContextController(), lambda s, m: seen.append((s, m)))
    request = ModelRequest("sys", _long_conversation())
    events = asyncio.run(_drain(wrapped, request))
    assert events[-1].kind == "message_complete"
    assert wrapped.retries == 1 and len(inner.requests) == 2
    retried = inner.requests[1].messages
    assert transcript_problem(retried) is None and len(retried) == 3
    step, _ = seen[0]
    assert step.step == "retry" and step.calls_removed == step.results_removed == ("1.0", "2.0")


def test_a_second_overflow_propagates() -> None:
    wrapped = OverflowRetryProvider(_Overflowing(failures=2), ContextController())
    with pytest.raises(ContextOverflowError):
        asyncio.run(_drain(wrapped, ModelRequest("sys", _long_conversation())))


def test_the_loop_retries_an_overflow_once_and_the_trace_conforms(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")

    def script(request: ModelRequest, n: int) -> list[Any]:
        assert transcript_problem(request.messages) is None
        if n < 2:
            return [ToolUseBlock(f"r{n}", "read", {"path": "a.txt"})]
        return [TextBlock("done")]

    ctl = ContextController()
    result, events, report = _run_in_bypass(
        _OverflowOn(3, ScriptedProvider(script)),  # the third request is refused as too long
        ws,
        tmp_path,
        "read a.txt twice",
        lambda t: {"overflow_hook": ctl.retry_hook(t)},
    )
    assert result.status.value == "completed"
    assert report.ok
    kinds = [e.kind for e in events if getattr(e, "turn", None) == 3]
    assert kinds[:4] == ["turn_start", "request", "compaction", "request"]
    retry = next(e for e in events if e.kind == "compaction")
    assert retry.step == "retry" and set(retry.calls_removed) == set(retry.results_removed)


def test_an_overflow_with_nothing_to_fold_fails_the_run_and_the_trace_conforms(
    tmp_path: Path,
) -> None:
    """Found by `metis explore`: an overflow on turn 2 (one turn before it, so
    nothing to fold) re-sent the request with no cut recorded (LOOP-1)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")

    result, events, report = _run_in_bypass(
        _OverflowOn(2, ScriptedProvider([[ToolUseBlock("r0", "read", {"path": "a.txt"})]])),
        ws,
        tmp_path,
        "read a.txt",
        lambda t: {"overflow_hook": ContextController().retry_hook(t)},
    )
    assert result.status.value == "failed" and "cannot be cut further" in result.error
    assert report.ok
    assert [e.kind for e in events].count("request") == 2  # turn 1's, and turn 2's once


def test_the_estimate_counts_redacted_thinking_and_server_tool_blocks() -> None:
    from metis_runtime.context._estimate import block_chars
    from metis_runtime.providers import RedactedThinkingBlock
    from metis_runtime.providers import ServerToolBlock

    raw = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": ["x" * 4000]}
    assert block_chars(RedactedThinkingBlock(data="A" * 800)) == 800
    assert block_chars(ServerToolBlock(raw=raw)) > 4000
