"""The MCP host: every server's client session, on a thread of its own.

The SDK is anyio code whose sessions must be entered and left by one task;
the agent loop is another event loop that must not wait on a server. So the
sessions live on the host's event loop (`metis-mcp` thread) and a call hops
there (`call`) and back. `start` is synchronous: the registry, and so the
trace header, needs the tools before the run's loop starts.

- Start: every server at once, each within the startup timeout
  (`MCP_TIMEOUT` in ms, as Claude Code; default 30 s): spawn (stdio) or
  connect (Streamable HTTP), the protocol handshake (`server/discover`, else
  `initialize`), then `tools/list` page by page. Any failure closes what was
  started and raises `McpStartError`, one line naming the server and why
  (with the last line of its stderr).
- Calls: each within the tool timeout (`MCP_TOOL_TIMEOUT` in ms; default
  600 s). A server that closes the connection mid-call (a crash) fails that
  call with an error; the next call reconnects it (start again, list again),
  at most `max_reconnects` times in the run. The call that was in flight is
  never sent again: its effect may have happened.
- Close: every session ends; a stdio server's process group is stopped
  (stdin closed, SIGTERM, SIGKILL) and dies with this process in any case.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import TypeVar

from attrs import frozen

from .._errors import ConfigError
from .._errors import ToolError
from ._classes import Annotations
from ._config import MAX_TOOL_NAME
from ._config import ServerConfig
from ._config import tool_name
from ._stdio import StderrTail
from ._stdio import stdio_transport

STARTUP_TIMEOUT_ENV = "MCP_TIMEOUT"
TOOL_TIMEOUT_ENV = "MCP_TOOL_TIMEOUT"
DEFAULT_STARTUP_S = 30.0
DEFAULT_TOOL_S = 600.0
DEFAULT_RECONNECTS = 3
_LIST_PAGES = 100  # a paginator that never ends cannot hang the start
_T = TypeVar("_T")


class McpStartError(ConfigError):
    """A server could not be started, reached or listed (one line)."""


class McpCallError(ToolError):
    """A call could not be completed; its result is an error."""


@frozen
class ListedTool:
    """A server's tool as the registry takes it."""

    server: str
    tool: str  # the server's own name for it
    name: str  # mcp__<server>__<tool>
    description: str
    input_schema: Mapping[str, Any]
    annotations: Annotations


def timeout_setting(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """A timeout in seconds from a millisecond environment variable."""
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return default
    try:
        ms = float(raw)
    except ValueError:
        raise ConfigError(f"${name}: must be a number of milliseconds, got {raw!r}") from None
    if not math.isfinite(ms) or ms <= 0:
        raise ConfigError(f"${name}: must be a positive number of milliseconds, got {raw!r}")
    return ms / 1000.0


def _why(exc: BaseException) -> str:
    if isinstance(exc, McpStartError | McpCallError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"cannot run the command: {exc.strerror or exc}"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Server:
    """One server's session; touched only on the host's loop."""

    def __init__(
        self,
        config: ServerConfig,
        env: Mapping[str, str],
        cwd: Path,
        startup_s: float,
        tool_s: float,
        max_reconnects: int,
    ) -> None:
        self.config = config
        self.env = env
        self.cwd = cwd
        self.startup_s = startup_s
        self.tool_s = tool_s
        self.reconnects_left = max_reconnects
        self.tail = StderrTail()
        self.client: Any = None
        self.serving: asyncio.Task[None] | None = None
        self.stop: asyncio.Event | None = None
        self.lock = asyncio.Lock()
        self.down: str | None = None  # why calls are refused (reconnects used up)

    def _context(self) -> contextlib.AbstractAsyncContextManager[Any]:
        from mcp import Client
        from mcp.types import Implementation

        config = self.config
        info = Implementation(name="metis", version="0.1.0")
        if config.transport == "stdio":
            cwd = self.cwd if config.cwd is None else self.cwd / config.cwd
            transport: Any = stdio_transport(
                config.command, config.args, self.env, cwd, self.tail, on_eof=self._eof
            )
            return Client(transport, client_info=info, cache=None)
        return _http_client(config, info)

    def _eof(self) -> None:
        """The server closed its stdout (it exited): reconnect before the next call."""
        self.client = None
        if self.stop is not None:
            self.stop.set()

    async def _serve(self, ready: asyncio.Future[list[Any]], stop: asyncio.Event) -> None:
        import anyio

        scope = anyio.CancelScope(deadline=anyio.current_time() + self.startup_s)
        try:
            with scope:
                async with self._context() as client:
                    tools = await _list_tools(client)
                    scope.deadline = math.inf
                    self.client = client
                    ready.set_result(tools)
                    await stop.wait()
        except Exception as exc:  # the server's failure, reported through `ready`
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self.client = None
            if not ready.done():
                ready.set_exception(
                    McpStartError(f"no answer within {self.startup_s:g}s ({STARTUP_TIMEOUT_ENV})")
                    if scope.cancelled_caught
                    else McpStartError("the session ended before it was ready")
                )

    async def connect(self) -> list[Any]:
        """Start (or restart) the session; the server's tools."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[Any]] = loop.create_future()
        self.stop = asyncio.Event()
        self.serving = loop.create_task(self._serve(ready, self.stop))
        try:
            return await ready
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self.stop is not None:
            self.stop.set()
        serving, self.serving = self.serving, None
        if serving is not None:
            with contextlib.suppress(Exception):
                await serving

    async def _ready(self) -> Any:
        """The live session, reconnecting a dropped one (within the budget)."""
        async with self.lock:
            if self.client is not None:
                return self.client
            if self.down is not None:
                raise McpCallError(self.down)
            if self.reconnects_left <= 0:
                self.down = f"mcp server '{self.config.name}' is down (no reconnects left)"
                raise McpCallError(self.down)
            self.reconnects_left -= 1
            await self.close()
            try:
                await self.connect()
            except Exception as exc:
                raise McpCallError(
                    f"mcp server '{self.config.name}': reconnecting failed: {self._with_tail(exc)}"
                ) from exc
            return self.client

    def _with_tail(self, exc: BaseException) -> str:
        why = _why(exc)
        last = self.tail.last()
        return f"{why} (stderr: {last})" if last else why

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED
        from mcp_types import REQUEST_TIMEOUT
        from pydantic import ValidationError

        client = await self._ready()
        name = self.config.name
        seen = self.tail.count
        try:
            return await client.call_tool(tool, dict(arguments), read_timeout_seconds=self.tool_s)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                await self._dropped()
                raise McpCallError(
                    f"mcp server '{name}' closed the connection during the call "
                    f"(it will be restarted for the next call){self._stderr_note(seen)}"
                ) from exc
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(
                    f"mcp server '{name}': no result within {self.tool_s:g}s ({TOOL_TIMEOUT_ENV})"
                ) from exc
            raise McpCallError(f"mcp server '{name}': error {exc.code}: {exc.message}") from exc
        except (ValidationError, RuntimeError) as exc:
            raise McpCallError(f"mcp server '{name}': malformed result: {_why(exc)}") from exc

    def _stderr_note(self, since: int) -> str:
        last = self.tail.last(since)
        return f"; stderr: {last}" if last else ""

    async def _dropped(self) -> None:
        """The connection is gone: end the session now, reconnect on demand."""
        async with self.lock:
            self.client = None
            await self.close()


def _http_client(config: ServerConfig, info: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @contextlib.asynccontextmanager
    async def session() -> Any:
        async with create_mcp_http_client(headers=dict(config.headers)) as http:
            transport = streamable_http_client(config.url, http_client=http)
            async with Client(transport, client_info=info, cache=None) as client:
                yield client

    return session()


async def _list_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise McpStartError(f"tools/list did not end within {_LIST_PAGES} pages")


class McpHost:
    """The servers of one agent, their sessions on the `metis-mcp` thread.

    `env` is each stdio server's environment before its own `env` entries
    (already filtered: the caller passes `tool_env()`), `workspace` its
    working directory (a server's `cwd` is taken relative to it).
    """

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        *,
        workspace: str | os.PathLike[str],
        envs: Mapping[str, Mapping[str, str]] | None = None,
        startup_s: float | None = None,
        tool_s: float | None = None,
        max_reconnects: int = DEFAULT_RECONNECTS,
    ) -> None:
        startup = (
            timeout_setting(STARTUP_TIMEOUT_ENV, DEFAULT_STARTUP_S)
            if startup_s is None
            else startup_s
        )
        tool = timeout_setting(TOOL_TIMEOUT_ENV, DEFAULT_TOOL_S) if tool_s is None else tool_s
        cwd = Path(os.path.realpath(workspace))
        envs = envs or {}
        self.startup_s = startup
        self._servers = {
            s.name: _Server(s, envs.get(s.name, {}), cwd, startup, tool, max_reconnects)
            for s in servers
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.notes: list[str] = []  # tools not offered, and why

    @property
    def servers(self) -> tuple[ServerConfig, ...]:
        return tuple(s.config for s in self._servers.values())

    def _submit(self, coro: Coroutine[Any, Any, _T]) -> asyncio.Future[_T]:
        assert self._loop is not None
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def start(self) -> tuple[ListedTool, ...]:
        """Start every server and list its tools (`McpStartError` if one fails)."""
        if self._thread is not None:
            raise RuntimeError("McpHost.start: already started")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="metis-mcp", daemon=True)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start_all(), loop)
        try:
            listed = future.result(timeout=self.startup_s + 30.0)
        except BaseException:
            self.close()
            raise
        return self._offer(listed)

    async def _start_all(self) -> list[tuple[ServerConfig, list[Any]]]:
        servers = list(self._servers.values())
        results = await asyncio.gather(*(s.connect() for s in servers), return_exceptions=True)
        for server, result in zip(servers, results, strict=True):
            if isinstance(result, BaseException):
                raise McpStartError(
                    f"mcp server '{server.config.name}' ({server.config.source}): "
                    f"failed to start: {server._with_tail(result)}"
                )
        return [(s.config, r) for s, r in zip(servers, results, strict=True)]  # type: ignore[misc]

    def _offer(self, listed: Sequence[tuple[ServerConfig, list[Any]]]) -> tuple[ListedTool, ...]:
        from ._schema import schema_problem

        offered: dict[str, ListedTool] = {}
        for config, tools in listed:
            for tool in tools:
                name = tool_name(config.name, tool.name)
                problem = schema_problem(tool.input_schema)
                if len(name) > MAX_TOOL_NAME:
                    problem = f"the name is longer than {MAX_TOOL_NAME} characters"
                elif name.lower() in (n.lower() for n in offered):
                    problem = "another tool of the server has the same normalized name"
                if problem is not None:
                    self.notes.append(f"{name}: not offered: {problem}")
                    continue
                offered[name] = ListedTool(
                    config.name,
                    tool.name,
                    name,
                    tool.description or tool.title or "",
                    dict(tool.input_schema),
                    Annotations.of(tool.annotations),
                )
        return tuple(offered.values())

    async def _on_host(self, server: str, act: Callable[[_Server], Coroutine[Any, Any, _T]]) -> _T:
        if self._loop is None or self._thread is None:
            raise McpCallError("the MCP host is not running")
        return await self._submit(act(self._servers[server]))

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call `tool` on `server` from any event loop; the SDK's CallToolResult."""
        return await self._on_host(server, lambda s: s.call(tool, arguments))

    def close(self) -> None:
        """End every session and stop the thread (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return

        async def close_all() -> None:
            await asyncio.gather(*(s.close() for s in self._servers.values()))

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=30.0)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10.0)
        if not thread.is_alive():
            loop.close()
        self._thread = None

    def __enter__(self) -> McpHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
