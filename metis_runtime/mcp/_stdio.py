"""The stdio transport: a server process the runtime starts and stops.

Kept here rather than the SDK's `stdio_client` because the server must die
with the run as bash does (specs/secrets.md, "Processes"): its own process
group (`start_new_session`), `PR_SET_PDEATHSIG` before exec
(`die_with_parent`; anyio's `open_process` takes no `preexec_fn`), and the
whole group killed when the connection ends. Messages are newline-delimited
JSON-RPC parsed by the SDK's own adapter; a line longer than
`MAX_LINE_BYTES` ends the connection instead of growing without bound. The
tail of the server's stderr is kept for the error a failed start reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._lifeline import die_with_parent

MAX_LINE_BYTES = 32 * 1024 * 1024
EXIT_GRACE_S = 2.0  # after stdin closes (the spec's shutdown), then SIGTERM, then SIGKILL
_POLL_S = 0.01


class StderrTail:
    """The last lines a server wrote to stderr (bounded)."""

    def __init__(self, lines: int = 20) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self.count = 0  # lines seen so far

    def add(self, raw: bytes) -> None:
        text = " ".join(raw.decode("utf-8", "replace").split())
        if text:
            self._lines.append(text[:300])
            self.count += 1

    def last(self, since: int = 0) -> str:
        """The last line, if it came after the first `since` lines."""
        return self._lines[-1] if self._lines and self.count > since else ""


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    # Polled: `wait()` also waits for the pipes, which a grandchild may hold open.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)
    return True


async def stop_process(proc: asyncio.subprocess.Process) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group; the
    group is killed even when the server exited on its own (what it left)."""
    pgid = proc.pid
    if proc.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            proc.stdin.close()
    try:
        if not await _exited(proc, EXIT_GRACE_S):
            _kill_group(pgid, signal.SIGTERM)
            await _exited(proc, EXIT_GRACE_S)
    finally:
        _kill_group(pgid, signal.SIGKILL)
    await _exited(proc, EXIT_GRACE_S)


async def spawn(
    command: str, args: tuple[str, ...], env: Mapping[str, str], cwd: Path
) -> asyncio.subprocess.Process:
    """Start the server: its own group, dying with this process."""
    return await asyncio.create_subprocess_exec(
        command,
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,  # own process group: pgid == pid
        preexec_fn=die_with_parent,  # dies with the runtime, even on SIGKILL
        limit=MAX_LINE_BYTES,
    )


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: tuple[str, ...],
    env: Mapping[str, str],
    cwd: Path,
    tail: StderrTail,
    on_eof: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server; the SDK's (read stream, write stream) over its
    stdio. The process is stopped when the context ends, however it ends;
    `on_eof` is called when the server closes its stdout (it exited)."""
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    proc = await spawn(command, args, env, cwd)
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def reader() -> None:
            async with read_in:
                while True:
                    try:
                        line = await stdout.readline()
                    except ValueError:  # longer than MAX_LINE_BYTES: the stream is unusable
                        await read_in.send(ValueError(f"a message over {MAX_LINE_BYTES} bytes"))
                        return
                    except (OSError, ConnectionError):
                        return
                    if not line:
                        if on_eof is not None:
                            on_eof()
                        return  # EOF: the session sees the connection close
                    if not line.strip():
                        continue
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        message = exc
                    try:
                        await read_in.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return

        async def writer() -> None:
            try:
                async with write_out:
                    async for item in write_out:
                        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                        stdin.write(data.encode("utf-8") + b"\n")
                        await stdin.drain()
            except (OSError, ConnectionError, RuntimeError):
                await read_in.aclose()  # the server stopped reading: end the session

        async def errors() -> None:
            with contextlib.suppress(OSError, ValueError, ConnectionError):
                while line := await stderr.readline():
                    tail.add(line)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            tg.start_soon(errors)
            try:
                yield read_out, write_in
            finally:
                with anyio.CancelScope(shield=True):
                    await stop_process(proc)
                    for stream in (read_out, write_in, read_in, write_out):
                        await stream.aclose()
                tg.cancel_scope.cancel()
    finally:
        _kill_group(proc.pid, signal.SIGKILL)  # however the context ended
