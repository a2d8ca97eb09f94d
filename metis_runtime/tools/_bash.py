"""The bash built-in: a real subprocess in its own process group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from metis_trace import CallClass
from metis_trace import ToolKind

from .._lifeline import die_with_parent
from .._lifeline import keeper_preexec
from .._lifeline import tree_mark
from .._private import default_redactor
from ._base import Classification
from ._base import Tool
from ._base import ToolContext
from ._base import ToolInput
from ._base import ToolOutput
from ._base import ToolSpec
from ._base import object_schema
from ._exits import ExitRecord
from ._exits import write_exit_record
from ._files import os_error
from ._footprint import shell_reads
from ._jobs import offer_detach

if TYPE_CHECKING:
    from ..shell import ShellAnalysis

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
MAX_OUTPUT = 30_000  # bytes of combined output kept: the first and last halves
TERM_GRACE = 1.0  # seconds from SIGTERM to SIGKILL
PIPE_DRAIN = 1.0  # seconds to wait for the pipe to close once the group is dead
CUT_MARGIN = 4096  # bytes kept beyond each shown half (longer than any token)
BASH = "/bin/bash"
DETACH_WAIT = 5.0  # seconds for a keeper to answer SIGUSR1
KEEPER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("_keeper.py")))


def _analyze(command: str) -> ShellAnalysis | None:
    # Lazy: the parser pulls in bashlex, which most tool calls never need.
    # (`analyze_command` caches: the loop asks for kind() and classify().)
    from ..shell import analyze_command

    try:
        return analyze_command(command)
    except Exception:
        return None  # an analysis that fails is treated as opaque (Exclusive)


def _read_only(analysis: ShellAnalysis | None) -> bool:
    return analysis is not None and analysis.read_only and not analysis.opaque


def _candidate_paths(
    analysis: ShellAnalysis | None, workspace: Path, home: str
) -> tuple[Path, ...]:
    """Every static word that may name a file, resolved: redirection targets and
    non-option arguments (and `--opt=value` values). An over-approximation for
    scope/protected-path checks; words only known at run time are not listed."""
    if analysis is None:
        return ()
    words: list[str] = []
    for cmd in analysis.commands:
        words.extend(cmd.writes)
        words.extend(cmd.reads)
        for i, word in enumerate(cmd.argv[1:], 1):
            if cmd.is_dynamic(i) and not word.startswith("~"):
                continue
            if word.startswith("-"):
                _, eq, value = word.partition("=")
                if not eq:
                    continue
                word = value
            words.append(word)
    seen: dict[Path, None] = {}
    for word in words:
        if not word or "\x00" in word:
            continue
        if word == "~" or word.startswith("~/"):
            word = home + word[1:]
        seen.setdefault(Path(os.path.realpath(os.path.join(workspace, word))))
    return tuple(seen)


class _Output:
    """Combined output kept within MAX_OUTPUT bytes: head and tail, with a marker.

    Each half is kept with CUT_MARGIN bytes more than it shows, so a cut is
    moved off any credential it would split (the shared detector reads the
    window): the shown head ends before a credential that crosses its end,
    the shown tail starts after one that crosses its start. A credential is
    never half shown (specs/secrets.md); the trace's redactor then removes
    the whole ones."""

    __slots__ = ("head", "tail", "total")

    HALF = MAX_OUTPUT // 2
    KEEP = HALF + CUT_MARGIN

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.KEEP - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.KEEP:
                del self.tail[: len(self.tail) - self.KEEP]

    def text(self) -> str:
        if self.total <= MAX_OUTPUT or self.total == len(self.head) + len(self.tail):
            whole = (self.head + self.tail).decode("utf-8", "replace")
            if self.total <= MAX_OUTPUT:
                return whole
            head_text, tail_text = whole, whole
            head_bytes, tail_bytes = self.head + self.tail, self.head + self.tail
        else:
            head_bytes, tail_bytes = self.head, self.tail
            head_text = head_bytes.decode("utf-8", "replace")
            tail_text = tail_bytes.decode("utf-8", "replace")
        redactor = default_redactor()
        head = redactor.head(head_text, len(head_bytes[: self.HALF].decode("utf-8", "replace")))
        start = len(tail_text) - len(tail_bytes[-self.HALF :].decode("utf-8", "replace"))
        tail = redactor.tail(tail_text, start)
        omitted = self.total - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
        return f"{head}\n[... {omitted} bytes of output truncated ...]\n{tail}"


class _Collector(asyncio.SubprocessProtocol):
    # A protocol rather than asyncio.subprocess.Process: Process.wait() also
    # waits for the pipes to close, which a leftover `cmd &` can hold open.
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.output = _Output()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.output.add(data if isinstance(data, bytes) else data.encode())

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # ESRCH: the group is already gone.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait(fut: asyncio.Future[None], timeout: float) -> None:
    # Shielded: a timeout here must not cancel the protocol's future.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(fut), timeout)


async def _terminate(proto: _Collector, pgid: int) -> None:
    """SIGTERM the group, give the shell TERM_GRACE to exit, then SIGKILL the group."""
    try:
        _signal_group(pgid, signal.SIGTERM)
        await _wait(proto.exited, TERM_GRACE)
    finally:
        _signal_group(pgid, signal.SIGKILL)
    await _wait(proto.exited, TERM_GRACE)


def _exit_text(rc: int | None) -> str:
    if rc is None:
        return "[exit code: unknown]"
    if rc < 0:
        try:
            return f"[killed by {signal.Signals(-rc).name}]"
        except ValueError:
            return f"[killed by signal {-rc}]"
    return f"[exit code: {rc}]"


def _join(output: str, trailer: str) -> str:
    if not output:
        return trailer
    return f"{output}\n{trailer}" if not output.endswith("\n") else output + trailer


class BashTool(Tool):
    spec = ToolSpec(
        "bash",
        "Run a command with /bin/bash -c in the workspace. Combined stdout/stderr and the "
        f"exit code are returned (output is truncated beyond {MAX_OUTPUT} bytes). "
        f"`timeout` in seconds (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}) "
        "kills the whole process group. `background: true` runs it as a background job. "
        "Processes a foreground command leaves behind are killed when it ends.",
        object_schema(
            {
                "command": {"type": "string", "minLength": 1},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT},
                "background": {"type": "boolean"},
            },
            ("command",),
        ),
    )

    out_of_process = True  # bash and its children

    def kind(self, input: ToolInput) -> ToolKind:
        self.spec.validate(input)
        return ToolKind.READ_ONLY if _read_only(_analyze(input["command"])) else ToolKind.EXEC

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.spec.validate(input)
        command: str = input["command"]
        analysis = _analyze(command)
        read_only = _read_only(analysis)
        if input.get("background", False):
            cls = CallClass.BACKGROUND
        else:
            cls = CallClass.SAFE if read_only else CallClass.EXCLUSIVE
        home = ctx.env.get("HOME") or os.path.expanduser("~")
        paths = _candidate_paths(analysis, ctx.workspace, home)
        return Classification(
            cls,
            None,
            ToolKind.READ_ONLY if read_only else ToolKind.EXEC,
            paths,
            command,
            reads=shell_reads(analysis, paths, ctx.workspace) if read_only else None,
        )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        """Run to completion. A background job is this same coroutine, detached by
        the JobManager; it has no default timeout."""
        self.spec.validate(input)
        command: str = input["command"]
        background: bool = input.get("background", False)
        timeout: float | None = input.get("timeout", None if background else DEFAULT_TIMEOUT)
        loop = asyncio.get_running_loop()
        kept = background and ctx.detach_jobs  # detachable: under the keeper
        program = (*KEEPER, BASH) if kept else (BASH,)
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: _Collector(loop),
                *program,
                "-c",
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=ctx.workspace,
                # The tree's mark as it is now: the context's environment may
                # predate the run's guard (`metis run` builds it first).
                env={**ctx.env, **tree_mark()},
                start_new_session=True,  # own process group: pgid == pid
                # Dies with the runtime, even on SIGKILL (the keeper: SIGUSR1
                # blocked until it can take it).
                preexec_fn=keeper_preexec if kept else die_with_parent,
            )
        )
        try:
            transport, proto = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Never interrupt the spawn itself: asyncio would kill only bash and
            # then wait for pipes that the rest of the group holds open. Let it
            # finish, then the whole group dies before the cancellation goes on.
            with contextlib.suppress(Exception):
                transport, proto = await spawn
                try:
                    await _terminate(proto, transport.get_pid())
                finally:
                    transport.close()
            raise
        except OSError as exc:
            raise os_error("bash", ctx.workspace, exc) from exc
        pgid = transport.get_pid()
        detach: _Detach | None = None
        if kept:
            detach = _Detach(proto, pgid)
            if not offer_detach(detach.run):
                detach = None
        try:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(proto.exited)
                if detach is not None and await detach.settled():
                    return ToolOutput(f"detached: process group {pgid}")
            except TimeoutError:
                await _terminate(proto, pgid)
                await _wait(proto.closed, PIPE_DRAIN)
                trailer = f"[timed out after {timeout:g}s; process group killed]"
                timed_out = ToolOutput(_join(proto.output.text(), trailer), is_error=True)
                return _recorded(ctx, background, transport.get_returncode(), timed_out)
            # The call's effects end with it: kill what the shell left behind.
            _signal_group(pgid, signal.SIGKILL)
            await _wait(proto.closed, PIPE_DRAIN)
        except BaseException:
            # Cancellation: the group dies before the CancelledError propagates
            # (unless it was detached on purpose).
            if detach is None or not detach.detached:
                await _terminate(proto, pgid)
            raise
        finally:
            transport.close()
        rc = transport.get_returncode()
        output = ToolOutput(_join(proto.output.text(), _exit_text(rc)), is_error=rc != 0)
        return _recorded(ctx, background, rc, output)


class _Detach:
    """Detaching a kept background job (`_keeper.py`): SIGUSR1 to the keeper,
    then its sign (the output pipe closes, the keeper exits 0); the session
    then leaves the run's guard (`agents/_process.release_session`)."""

    def __init__(self, proto: _Collector, pgid: int) -> None:
        self.proto = proto
        self.pgid = pgid
        self.asked = False
        self.detached = False
        self._done = asyncio.Event()

    async def run(self) -> int | None:
        proto = self.proto
        if proto.exited.done():
            return None  # it ended on its own: its outcome is its own
        self.asked = True
        try:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pgid, signal.SIGUSR1)
            await _wait(proto.closed, DETACH_WAIT)
            await _wait(proto.exited, DETACH_WAIT)
            if proto.closed.done() and proto.exited.done():
                from ..agents._process import release_session

                release_session(self.pgid)
                self.detached = True
        finally:
            self._done.set()
        return self.pgid if self.detached else None

    async def settled(self) -> bool:
        """After the keeper exited: True if that was its detachment."""
        if self.asked:
            await self._done.wait()
        return self.detached


def _recorded(ctx: ToolContext, background: bool, rc: int | None, output: ToolOutput) -> ToolOutput:
    """Leave the call's exit record (RETRY-4) before its outcome is returned: a
    runtime killed from here on until its commit is traced loses nothing."""
    if ctx.exit_dir is not None and ctx.call_occ is not None and not background:
        # Unwritable: no record, so a kill before the commit leaves it `unknown`.
        with contextlib.suppress(OSError):
            write_exit_record(
                ctx.exit_dir, ExitRecord(ctx.call_occ, rc, output.content, output.is_error)
            )
    return output
