"""The write-ahead journal and resume: committed effects are never re-run,
open occurrences are repaired, and the whole trace passes check_trace."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from metis_runtime import AgentLoop
from metis_runtime import Journal
from metis_runtime import JournalError
from metis_runtime import MetisRuntimeError
from metis_runtime import RunResult
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime import scan_trace
from metis_runtime.providers import Cassette
from metis_runtime.providers import Interaction
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_studies.faults._harness import close_loop
from metis_trace import EffectOutcome
from metis_trace import Mode
from tests._metis_cli import env as subprocess_env
from tests.runtime.test_loop_support import SLOW_MARKED_CALL
from tests.runtime.test_loop_support import anthropic_body
from tests.runtime.test_loop_support import assert_conforms
from tests.runtime.test_loop_support import kinds
from tests.runtime.test_loop_support import make_loop
from tests.runtime.test_loop_support import of_kind
from tests.runtime.test_loop_support import read
from tests.runtime.test_loop_support import replay_run_argv
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import resume_run
from tests.runtime.test_loop_support import sigint_when
from tests.runtime.test_loop_support import sigkill_when_marked
from tests.runtime.test_loop_support import write_scenario
from tests.runtime.test_providers_support import REDACTED_DATA
from tests.runtime.test_providers_support import REDACTED_NEXT_CONTENT
from tests.runtime.test_providers_support import REDACTED_TOOL_ID
from tests.runtime.test_providers_support import redacted_thinking_body
from tests.runtime.test_providers_support import web_search_blocks

ROOT = Path(__file__).resolve().parents[2]


def test_journal_round_trip_and_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal.create(path, "run-1", {"task": "t"}, fsync=False)
    j.message(0, "task", Message.user("hello"))
    j.admit("1.0", "c1", "bash", {"command": "true"})
    j.commit("1.0", EffectOutcome.OK, "out")
    j.close()
    with path.open("ab") as fh:
        fh.write(b'{"type":"commit","occ":"1.1"')  # killed during a write
    j2, state = Journal.open(path, fsync=False)
    assert state.run_id == "run-1" and state.config == {"task": "t"}
    assert [(t, r) for t, r, _ in state.messages] == [(0, "task")]
    assert state.admitted == {"1.0"} and dict(state.commits) == {"1.0": (EffectOutcome.OK, "out")}
    assert state.status is None
    j2.end("completed")
    j2.close()
    assert Journal.open(path, fsync=False)[1].status == "completed"


def test_a_bad_journal_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"type":"run","run_id":"r","config":{}}\nnot json\n')
    with pytest.raises(JournalError, match=r"j.jsonl: line 2: not valid JSON"):
        Journal.open(path)
    path.write_text('{"type":"run","run_id":"r"}\n{"type":"commit","occ":"1.0"}\n')
    with pytest.raises(JournalError, match="line 2: missing field 'outcome'"):
        Journal.open(path)
    path.write_text('{"type":"message"}\n')
    with pytest.raises(JournalError, match="line 1: the first entry must be the run entry"):
        Journal.open(path)


class _Killed(BaseException):
    """Stands for SIGKILL at one exact point: nothing after it is written."""


class _DieAt(TraceWriter):
    def __init__(self, *args: Any, kind: str, nth: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind, self.left = kind, nth

    def emit(self, kind: str, causes: tuple[int, ...] = (), **fields: Any) -> int:
        if kind == self.kind:
            self.left -= 1
            if self.left == 0:
                raise _Killed
        return super().emit(kind, causes, **fields)


def _script(ws: Path) -> Any:
    """Turn 1: append to count.txt (an exec that commits), then list; turn 2: answer."""

    def script(request: ModelRequest, turn: int) -> list[Any]:
        answered = sum(1 for m in request.messages if m.role == "assistant")
        if answered == 0:
            return [
                ToolUseBlock("c1", "bash", {"command": "echo once >> count.txt"}),
                ToolUseBlock("c2", "ls", {}),
            ]
        return [TextBlock("finished")]

    return script


def _paths(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workspace, the trace and the journal of a run in `tmp_path`."""
    return tmp_path / "ws", tmp_path / "t.jsonl", tmp_path / "t.jsonl.journal"


def _dying_loop(
    tmp_path: Path,
    script: Any,
    *,
    die: str | None = None,
    nth: int = 1,
    tools: tuple[str, ...] = ("read", "write", "edit", "ls", "glob", "grep", "bash"),
    journal_type: type[Journal] = Journal,
) -> AgentLoop:
    """A new run in bypass on a new `journal_type` journal and a trace that
    dies at its `nth` `die` event (a plain trace without `die`)."""
    ws, trace_path, journal_path = _paths(tmp_path)
    ws.mkdir()
    header = make_header(mode=Mode.BYPASS, tools=tools)
    trace = (
        _DieAt(trace_path, header, kind=die, nth=nth) if die else TraceWriter(trace_path, header)
    )
    journal = journal_type.create(journal_path, header.run_id, {}, fsync=False)
    return make_loop(script, ws, trace_path, trace=trace, journal=journal)


def _until_killed(loop: AgentLoop, main: Coroutine[Any, Any, RunResult]) -> None:
    """Run `main` (the loop's run or resume) until it is killed, then close
    the loop's trace and journal as the dead process left them."""
    with pytest.raises(_Killed):
        asyncio.run(main)
    close_loop(loop)


def _start(tmp_path: Path, die: str, nth: int = 1) -> tuple[Path, Path, Path]:
    loop = _dying_loop(tmp_path, _script(tmp_path / "ws"), die=die, nth=nth)
    _until_killed(loop, loop.run("count"))
    return _paths(tmp_path)


def _resume(ws: Path, trace_path: Path, journal_path: Path) -> tuple[RunResult, AgentLoop]:
    trace = TraceWriter(trace_path)
    journal, state = Journal.open(journal_path, fsync=False)
    loop = make_loop(_script(ws), ws, trace_path, trace=trace, journal=journal)
    try:
        return asyncio.run(loop.resume(state)), loop
    finally:
        trace.close()
        journal.close()


def test_resume_after_a_kill_between_journal_commit_and_effect_end(tmp_path: Path) -> None:
    ws, trace_path, journal_path = _start(tmp_path, die="effect_end")
    header, events = read(trace_path)
    assert kinds(events)[-2:] == ["effect_start", "commit"]  # the trace's commit came first
    assert_conforms(header, events)  # a prefix of a valid run
    result, loop = _resume(ws, trace_path, journal_path)
    assert result.status.value == "completed" and result.text == "finished"
    header, events = read(trace_path)
    assert_conforms(header, events)
    ks = kinds(events)
    i = ks.index("interrupt")
    assert ks[i : i + 5] == ["interrupt", "effect_end", "resume", "result", "repair"]
    end, res, repair = events[i + 1], events[i + 3], events[i + 4]
    assert (end.occ, end.committed, end.outcome.value) == ("1.0", True, "ok")
    assert (res.occ, res.status.value, res.content) == ("1.0", "ok", "[exit code: 0]")
    assert repair.stubbed == ("1.1",)
    assert (ws / "count.txt").read_text() == "once\n"  # RETRY-1: ran exactly once
    assert [e.occ for e in of_kind(events, "effect_start")] == ["1.0"]
    # what the model saw next: the committed output, then the stub, in call order
    sent = loop.provider.requests[0].messages[-1].content
    assert [b.tool_use_id for b in sent if isinstance(b, ToolResultBlock)] == ["c1", "c2"]
    assert sent[1].is_error and "interrupted" in sent[1].content  # type: ignore[union-attr]


def test_resume_after_a_kill_before_the_commit_reports_the_outcome_unknown(tmp_path: Path) -> None:
    """The bash call ran to its end, and the process died before recording
    the commit (issue 13): resume says the outcome is unknown, never that it
    did not run, and does not run it again (RETRY-3)."""
    ws, trace_path, journal_path = _start(tmp_path, die="commit")
    assert (ws / "count.txt").read_text() == "once\n"  # the effect happened
    result, loop = _resume(ws, trace_path, journal_path)
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)
    ks = kinds(events)
    i = ks.index("interrupt")
    assert ks[i : i + 4] == ["interrupt", "effect_end", "resume", "repair"]
    end, repair = events[i + 1], events[i + 3]
    assert (end.occ, end.outcome.value, end.committed) == ("1.0", "unknown", False)
    assert repair.stubbed == ("1.0", "1.1") and repair.unknown == ("1.0",)
    assert repair.call_ids == ("c1", "c2")
    assert (ws / "count.txt").read_text() == "once\n"  # not run again
    sent = loop.provider.requests[0].messages[-1].content
    assert "outcome unknown" in sent[0].content  # type: ignore[union-attr]
    assert "outcome unknown" not in sent[1].content  # type: ignore[union-attr]


class _JournalDiesAtCommit(Journal):
    def commit(self, occ: str, outcome: EffectOutcome, content: str) -> None:
        raise _Killed


def test_resume_after_a_kill_between_trace_commit_and_journal_commit(tmp_path: Path) -> None:
    """The trace holds the commit, the journal lost the output: the call is
    answered as committed (never re-run), with a note instead of its output."""
    ws, trace_path, journal_path = _paths(tmp_path)
    loop = _dying_loop(
        tmp_path, _script(ws), tools=("ls", "bash"), journal_type=_JournalDiesAtCommit
    )
    _until_killed(loop, loop.run("count"))
    result, loop = _resume(ws, trace_path, journal_path)
    assert result.status.value == "completed"
    header, events = read(trace_path)
    assert_conforms(header, events)
    (answer,) = [e for e in of_kind(events, "result") if e.occ == "1.0"]
    assert answer.status.value == "ok" and "output not journaled" in answer.content
    assert (ws / "count.txt").read_text() == "once\n"


def test_resume_after_a_kill_while_streaming_redoes_only_the_request(tmp_path: Path) -> None:
    ws, trace_path, journal_path = _start(tmp_path, die="assistant", nth=2)
    result, loop = _resume(ws, trace_path, journal_path)
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert result.status.value == "completed"
    ks = kinds(events)
    i = ks.index("interrupt")
    assert ks[i - 2 : i + 4] == [
        "turn_start",
        "request",
        "interrupt",
        "resume",
        "repair",
        "turn_start",
    ]
    assert of_kind(events, "repair")[0].stubbed == ()
    assert (ws / "count.txt").read_text() == "once\n"
    # the history was rebuilt: task, assistant, results
    assert [m.role for m in loop.provider.requests[0].messages] == ["user", "assistant", "user"]


def test_resume_after_a_kill_inside_resume_is_idempotent(tmp_path: Path) -> None:
    ws, trace_path, journal_path = _start(tmp_path, die="effect_end")
    # the first resume dies right after `resume`, before reporting the committed result
    trace = _DieAt(trace_path, kind="result")
    journal, state = Journal.open(journal_path, fsync=False)
    loop = make_loop(_script(ws), ws, trace_path, trace=trace, journal=journal)
    _until_killed(loop, loop.resume(state))
    assert scan_trace(read(trace_path)[1]).phase == "resumed"
    result, _ = _resume(ws, trace_path, journal_path)
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert result.status.value == "completed"
    assert kinds(events).count("resume") == 1 and kinds(events).count("repair") == 1
    assert (ws / "count.txt").read_text() == "once\n"


def test_resume_of_an_answered_run_just_ends_it(tmp_path: Path) -> None:
    ws, trace_path, journal_path = _start(tmp_path, die="run_end")
    result, _ = _resume(ws, trace_path, journal_path)
    header, events = read(trace_path)
    assert_conforms(header, events)
    assert result.status.value == "completed" and result.text == "finished"
    assert kinds(events)[-2:] == ["assistant", "run_end"]
    with pytest.raises(MetisRuntimeError, match="already ended"):
        _resume(ws, trace_path, journal_path)


# --- a real process, killed with SIGKILL in the middle of a batch ----------------------


@pytest.mark.slow
def test_sigkill_mid_batch_then_resume(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scenario = write_scenario(
        tmp_path / "kill.yaml",
        [
            [
                {"text": "Counting, then a slow step."},
                {"tool": "bash", "id": "t1", "input": {"command": "echo ran >> count.txt"}},
                {
                    "tool": "bash",
                    "id": "t2",
                    "input": {"command": SLOW_MARKED_CALL},
                },
                {"tool": "ls", "id": "t3", "input": {}},
            ],
            [{"text": "All done."}],
        ],
    )
    trace = tmp_path / "run" / "trace.jsonl"
    env = subprocess_env()
    returncode = sigkill_when_marked(
        replay_run_argv(ws, scenario, "--trace", str(trace)),
        env,
        tmp_path,
        ws / "started.marker",  # the second call runs: the first has committed
        timeout=60,
    )
    assert returncode == -signal.SIGKILL
    header, events = read(trace)
    assert kinds(events)[-1] == "effect_start" and events[-1].occ == "1.1"
    assert (ws / "count.txt").read_text() == "ran\n"

    done = resume_run(trace, env, tmp_path)
    assert "All done." in done.stdout
    header, events = read(trace)
    assert_conforms(header, events)
    # one-to-one closure: every occurrence has exactly one result or one repair stub
    closed = [e.occ for e in of_kind(events, "result")]
    for repair in of_kind(events, "repair"):
        closed.extend(repair.stubbed)
    occs = [c.occ for a in of_kind(events, "assistant") for c in a.calls]
    assert sorted(closed) == sorted(occs) and len(set(closed)) == len(closed)
    assert of_kind(events, "repair")[0].stubbed == ("1.1", "1.2")
    assert results_by_occ(events)["1.0"][0] == "ok"
    assert (ws / "count.txt").read_text() == "ran\n"  # the committed effect ran exactly once
    assert [e.occ for e in of_kind(events, "effect_start")] == ["1.0", "1.1"]
    assert of_kind(events, "run_end")[0].status.value == "completed"


def test_a_live_run_cannot_be_resumed_by_a_second_process(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    live = Journal.create(path, "run-1", {}, fsync=False)
    with pytest.raises(JournalError, match="in use by another process"):
        Journal.open(path)
    trace_path = tmp_path / "t.jsonl"
    writer = TraceWriter(trace_path, make_header(mode=Mode.DEFAULT, tools=()))
    with pytest.raises(MetisRuntimeError, match="in use by another process"):
        TraceWriter(trace_path)
    writer.close()
    live.close()
    Journal.open(path)[0].close()
    TraceWriter(trace_path).close()


@pytest.mark.slow
def test_ctrl_c_mid_batch_records_the_interrupt_then_resume_completes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    scenario = write_scenario(
        tmp_path / "int.yaml",
        [
            [
                {"tool": "write", "id": "t1", "input": {"path": "one.txt", "content": "1"}},
                {
                    "tool": "bash",
                    "id": "t2",
                    "input": {"command": "touch started.marker; sleep 60"},
                },
            ],
            [{"text": "All done."}],
        ],
    )
    trace = tmp_path / "trace.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = replay_run_argv(ws, scenario, "--trace", str(trace))
    code, err = sigint_when(argv, env, tmp_path, (ws / "started.marker").exists, 60)
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"metis run: interrupted; resume with: metis run --resume --trace {trace}"
    )
    assert "Traceback" not in err
    header, events = read(trace)
    assert_conforms(header, events)
    # The signal is recorded, and the interrupt names it (SCHED-5).
    assert kinds(events)[-4:] == ["effect_start", "signal", "interrupt", "effect_end"]
    assert events[-3].signum == signal.SIGINT and events[-3].seq in events[-2].causes
    assert events[-1].outcome.value == "cancelled"  # the bash group was killed with it
    resume_run(trace, env, tmp_path)
    header, events = read(trace)
    assert_conforms(header, events)
    assert of_kind(events, "repair")[0].stubbed == ("1.1",)
    assert (ws / "one.txt").read_text() == "1"


def test_journal_keeps_redacted_thinking_and_server_tool_blocks(tmp_path: Path) -> None:
    turn = Message(
        "assistant",
        (
            ThinkingBlock("plan", "EqQBCkYIBxgC+/="),
            RedactedThinkingBlock("EmwKAhgBEgy3va3pzix/LafPsn4a=="),
            *web_search_blocks("EvoP+/="),
            ToolUseBlock("c1", "ls", {}),
        ),
    )
    path = tmp_path / "j.jsonl"
    j = Journal.create(path, "run-1", {}, fsync=False)
    j.message(0, "task", Message.user("go"))
    j.message(1, "assistant", turn)
    j.close()
    j2, state = Journal.open(path, fsync=False)
    j2.close()
    assert [m for _, _, m in state.messages] == [Message.user("go"), turn]


def _anthropic(body: str) -> Interaction:
    return Interaction(
        "https://api.anthropic.com/v1/messages", "anthropic", "https://api.anthropic.com", 200, body
    )


def test_resume_sends_back_thinking_and_redacted_thinking_unchanged(tmp_path: Path) -> None:
    # Turn 1 comes through the real Anthropic adapter (thinking, redacted_thinking,
    # text, ls); the run is killed after the ls effect; resume must send the
    # journaled turn back byte for byte, as the API requires of the turn it continues.
    ws, trace_path, journal_path = _paths(tmp_path)
    answer = _anthropic(anthropic_body("msg_2", [{"text": "finished"}]))
    loop = _dying_loop(tmp_path, [], die="effect_end")
    cassette = Cassette(tmp_path / "c.yaml", (_anthropic(redacted_thinking_body()), answer))
    loop.provider = ReplayProvider(cassette)
    _until_killed(loop, loop.run("list the files"))
    assert REDACTED_DATA in journal_path.read_text()

    trace = TraceWriter(trace_path)
    journal, state = Journal.open(journal_path, fsync=False)
    loop = make_loop([], ws, trace_path, trace=trace, journal=journal)
    replay = loop.provider = ReplayProvider(Cassette(tmp_path / "c.yaml", (answer,)))
    try:
        result = asyncio.run(loop.resume(state))
    finally:
        trace.close()
        journal.close()
    assert result.status.value == "completed" and result.text == "finished"
    assert_conforms(*read(trace_path))
    (sent,) = replay.sent
    assert sent["messages"][1] == {"role": "assistant", "content": REDACTED_NEXT_CONTENT}
    assert sent["messages"][2]["content"][0]["tool_use_id"] == REDACTED_TOOL_ID


def _resume_forgetting_commits(
    ws: Path, trace_path: Path, journal_path: Path
) -> tuple[RunResult, AgentLoop]:
    """Mutant 06: the journal reader drops every commit entry."""
    import attrs

    trace = TraceWriter(trace_path)
    journal, state = Journal.open(journal_path, fsync=False)
    loop = make_loop(_script(ws), ws, trace_path, trace=trace, journal=journal)
    try:
        return asyncio.run(loop.resume(attrs.evolve(state, commits={}))), loop
    finally:
        trace.close()
        journal.close()


@pytest.mark.metis_nonconforming
def test_a_resumed_result_carries_the_commits_output_and_a_forgotten_commit_is_retry_2(
    tmp_path: Path,
) -> None:
    """Killed before the committed call's result: the trace holds its `commit`
    (with the digest of its output) and right after it its `effect_end`, so
    the journal holds the output. The resumed result carries it; a resume
    that lost the journal's commits answers "not journaled": RETRY-2."""
    from metis_check import check_trace
    from metis_trace import NOT_JOURNALED
    from metis_trace import content_digest

    for name, resume in (("good", _resume), ("mutant", _resume_forgetting_commits)):
        (tmp_path / name).mkdir()
        ws, trace_path, journal_path = _start(tmp_path / name, die="result")
        header, events = read(trace_path)
        (commit,) = of_kind(events, "commit")
        assert events[commit.seq + 1].kind == "effect_end" and commit.occ == "1.0"
        assert commit.digest == content_digest("[exit code: 0]")
        assert not [e for e in of_kind(events, "result") if e.occ == "1.0"]
        resume(ws, trace_path, journal_path)
        header, events = read(trace_path)
        (answer,) = [e for e in of_kind(events, "result") if e.occ == "1.0"]
        report = check_trace(events, header)
        if name == "good":
            assert content_digest(answer.content) == commit.digest
            assert report.ok, report.first
        else:
            assert answer.content == NOT_JOURNALED
            assert report.first is not None and report.first.invariant == "RETRY-2"
            assert "journal holds its output" in report.first.message
        assert (ws / "count.txt").read_text() == "once\n"
