"""The fault matrix's rows that run in this process: each drives the real loop,
injects one fault and states what must come of it (closure and effects)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import attrs

from metis_runtime import AgentLoop
from metis_runtime.providers import Cassette
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import load_cassette
from metis_trace import EffectEnd
from metis_trace import TraceEvent

from .._sync import run_sync
from ._harness import DONE
from ._harness import RECORDED_STREAM
from ._harness import FaultRow
from ._harness import Harness
from ._harness import OnStart
from ._harness import bash
from ._harness import close_loop
from ._harness import log_line
from ._harness import row_of
from ._harness import scripted
from ._harness import until_running

SLOW = "echo b >> log.txt; sleep 30; echo B >> log.txt"  # `B` only if it ran to the end
BATCH_WITH_SLOW = (bash("t1", log_line("a")), bash("t2", SLOW), bash("t3", log_line("c")))


def resumed_mid_batch(case: str, h: Harness) -> FaultRow:
    """The row of a batch (a, a slow b, c) stopped while b runs, then resumed: a
    ran, b's outcome is unknown (its end never ran), c never ran."""
    return row_of(
        case,
        h,
        "1.0 ok, 1.1 unknown, 1.2 interrupted; run completed",
        {"a": 1, "b": 1, "B": 0, "c": 0},
    )


def tool_raises(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "raises", dispatcher=dispatcher)
    batch = (
        bash("t1", log_line("a")),
        ToolUseBlock("t2", "explode", {}),
        bash("t3", log_line("c")),
    )
    run_sync(h.run(scripted(batch, DONE)))
    return row_of(
        "a tool raises mid-batch",
        h,
        "1.0 ok, 1.1 error, 1.2 ok; run completed",
        {"a": 1, "c": 1},
    )


def tool_hangs(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "hangs", dispatcher=dispatcher)
    hang = bash("t1", "echo s >> log.txt; sleep 30; echo e >> log.txt", timeout=0.5)
    run_sync(h.run(scripted((hang, bash("t2", log_line("c"))), DONE)))
    return row_of(
        "a tool hangs past its timeout",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"s": 1, "e": 0, "c": 1},
    )


def cancel_mid_batch(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "cancel", dispatcher=dispatcher)
    holder: list[AgentLoop] = []

    async def press_stop() -> None:
        await until_running(h, "b")
        holder[0].cancel("the user pressed stop")

    async def main() -> None:
        loop, _ = h.loop(scripted(BATCH_WITH_SLOW, DONE), OnStart("1.1", press_stop))
        holder.append(loop)
        try:
            await loop.run("the task")
        finally:
            close_loop(loop)

    run_sync(main())
    return row_of(
        "cancel in the middle of a batch",
        h,
        "1.0 ok, 1.1 cancelled, 1.2 skipped; run cancelled",
        {"a": 1, "b": 1, "B": 0, "c": 0},
    )


def interrupt_then_resume(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "interrupt", dispatcher=dispatcher)
    running: list[asyncio.Future[Any]] = []
    loops: list[Any] = []

    async def interrupt() -> None:
        await until_running(h, "b")
        # What Ctrl-C does: the signal is recorded (the interrupt's source,
        # SCHED-5), then the run's task is cancelled.
        loops[0].signal_received(signal.SIGINT)
        running[0].cancel()

    async def main() -> None:
        loop, _ = h.loop(scripted(BATCH_WITH_SLOW, DONE), OnStart("1.1", interrupt))
        loops.append(loop)
        task = asyncio.ensure_future(loop.run("the task"))
        running.append(task)
        await asyncio.wait((task,))
        close_loop(loop)
        if not task.cancelled():
            raise AssertionError(f"the run was not interrupted: {task.result()}")
        await h.resume(scripted(DONE))

    run_sync(main())
    return resumed_mid_batch("interrupt, then resume", h)


def cut_stream_cassette(path: Path = RECORDED_STREAM) -> Cassette:
    """The recorded Anthropic tool_use stream, rewritten in memory: block 0
    is a complete `echo a` call, block 1 an `echo b` call whose arguments are
    cut off mid-JSON (the connection dropped)."""
    recorded = load_cassette(path)
    first = recorded.interactions[0]
    body = first.body
    head = body[: body.index("event: content_block_start")]
    block = body[len(head) : body.index("event: message_delta")]

    def rewrite(index: int, call_id: str, command: str) -> str:
        out = []
        for chunk in block.split("\n\n"):
            lines = chunk.split("\n")
            for i, line in enumerate(lines):
                if not line.startswith("data: "):
                    continue
                data = json.loads(line[len("data: ") :])
                if "index" in data:
                    data["index"] = index
                if data.get("type") == "content_block_start":
                    data["content_block"]["id"] = call_id
                delta = data.get("delta", {})
                if delta.get("type") == "input_json_delta" and delta.get("partial_json"):
                    delta["partial_json"] = json.dumps({"command": command})
                lines[i] = "data: " + json.dumps(data)
            out.append("\n".join(lines))
        return "\n\n".join(out)

    second = rewrite(1, "toolu_cut", log_line("b"))
    body = head + rewrite(0, "toolu_whole", log_line("a")) + second
    cut = body.rindex("echo b") + len("echo b")  # inside block 1's arguments
    return Cassette(recorded.path, (attrs.evolve(first, body=body[:cut]),))


def stream_cut(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "stream-cut", dispatcher=dispatcher)
    run_sync(h.run(ReplayProvider(cut_stream_cassette(), chunk_size=97)))
    return row_of(
        "provider stream cut inside a tool_use",
        h,
        "no call; run failed",
        {"a": 0, "b": 0},
    )


def malformed_arguments(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "malformed", dispatcher=dispatcher)
    batch = (
        ToolUseBlock("m1", "bash", {}, input_error="Expecting ',' delimiter: line 1 column 31"),
        ToolUseBlock("m2", "bash", {"cmd": log_line("x")}),  # schema: no `command`
        ToolUseBlock("m3", "no_such_tool", {"command": log_line("y")}),
        bash("m4", log_line("c")),
    )
    run_sync(h.run(scripted(batch, DONE)))
    return row_of(
        "malformed arguments",
        h,
        "1.0 error, 1.1 error, 1.2 error, 1.3 ok; run completed",
        {"x": 0, "y": 0, "c": 1},
    )


def denial_mid_batch(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "denial", dispatcher=dispatcher)
    (h.ws / "keep.txt").write_text("keep\n")
    batch = (bash("t1", log_line("a")), bash("t2", "rm -f keep.txt"), bash("t3", log_line("c")))
    run_sync(h.run(scripted(batch, DONE)))
    return row_of(
        "a denial in the middle of a batch",
        h,
        "1.0 ok, 1.1 denied, 1.2 ok; run completed",
        {"a": 1, "c": 1, "keep.txt": "present"},
        {**h.counts("a", "c"), "keep.txt": _present(h.ws / "keep.txt")},
    )


def background_fails(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "background", dispatcher=dispatcher)
    job = bash("j1", "echo s >> log.txt; sleep 0.3; exit 3", background=True)
    run_sync(h.run(scripted((job,), DONE)))
    return row_of(
        "a background job fails after its handshake",
        h,
        "1.0 ok (job error); run completed",
        {"s": 1},
    )


def duplicate_ids(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "duplicate-ids", dispatcher=dispatcher)
    provider = scripted(
        (bash("dup", log_line("a")), bash("dup", log_line("b"))),
        (bash("dup", log_line("c")),),
        DONE,
    )
    run_sync(h.run(provider))

    def sent(events: list[TraceEvent]) -> str:
        # What went back to the provider: one tool_result per occurrence.
        counts = [
            sum(
                isinstance(b, ToolResultBlock) and b.tool_use_id == "dup"
                for b in r.messages[-1].content
            )
            for r in provider.requests[1:]
        ]
        return f"; sent {'+'.join(map(str, counts))} results for id dup"

    return row_of(
        "duplicate ids within a message and across turns",
        h,
        "1.0 ok, 1.1 ok, 2.0 ok; run completed; sent 2+1 results for id dup",
        {"a": 1, "b": 1, "c": 1},
        extra=sent,
    )


def _present(path: Path) -> str:
    return "present" if path.exists() else "absent"


def partial_edit_rolled_back(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "rollback", dispatcher=dispatcher)
    (h.ws / "one.txt").write_text("OLD\n")
    files = {"one.txt": "NEW\n", "sub/two.txt": "NEW\n", "three.txt": "NEW\n"}
    batch = (
        ToolUseBlock("w1", "multi_write", {"files": files, "fail_after": 2}),
        bash("w2", log_line("c")),
    )
    run_sync(h.run(scripted(batch, DONE)))
    observed = {
        "one.txt": (h.ws / "one.txt").read_text().strip(),
        "sub/": _present(h.ws / "sub"),
        "three.txt": _present(h.ws / "three.txt"),
        **h.counts("c"),
    }
    return row_of(
        "partial file mutation, rolled back",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"one.txt": "OLD", "sub/": "absent", "three.txt": "absent", "c": 1},
        observed,
    )


def partial_exec_kept(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "exec-partial", dispatcher=dispatcher)
    run_sync(h.run(scripted((bash("x1", "printf partial > partial.txt; exit 7"),), DONE)))
    events, _, _ = h.events()
    committed = [e.committed for e in events if isinstance(e, EffectEnd)]
    return row_of(
        "partial exec mutation (exec is never rolled back)",
        h,
        "1.0 error; run completed",
        {"partial.txt": "present", "committed": [True]},
        {"partial.txt": _present(h.ws / "partial.txt"), "committed": committed},
    )
