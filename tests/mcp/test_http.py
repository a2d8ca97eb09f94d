"""The host over Streamable HTTP against a real server on 127.0.0.1: list,
call, headers sent, and a server that goes away (the call fails) and comes
back (the next call reconnects)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from metis_runtime.mcp import McpCallError
from metis_runtime.mcp import McpHost
from metis_runtime.mcp import McpStartError
from metis_runtime.mcp import McpTool
from metis_runtime.mcp import mcp_tools
from metis_runtime.mcp import parse_server

from .conftest import free_port
from .conftest import start_http
from .conftest import stop


def _tools(host: McpHost) -> dict[str, McpTool]:
    return {t.name: t for t in mcp_tools(host, host.start())}


def _call(tool: McpTool, args: dict[str, object]) -> str:
    out = asyncio.run(tool.run(args, None))  # type: ignore[arg-type]
    assert not out.is_error
    return out.content


def test_http_list_call_drop_and_reconnect(tmp_path: Path) -> None:
    proc, port = start_http()
    entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Test": "1"}}
    host = McpHost([parse_server("web", entry, "cfg")], workspace=tmp_path, tool_s=10.0)
    try:
        tools = _tools(host)
        assert tools["mcp__web__lookup"].listed.annotations.read_only is True
        assert _call(tools["mcp__web__lookup"], {"key": "k"}) == "value of k"
        assert _call(tools["mcp__web__header"], {"name": "x-test"}) == "1"
        stop(proc)
        with pytest.raises(McpCallError):
            _call(tools["mcp__web__lookup"], {"key": "gone"})
        proc, _ = start_http(port=port)
        assert _call(tools["mcp__web__lookup"], {"key": "back"}) == "value of back"
    finally:
        host.close()
        stop(proc)


def test_http_server_not_listening_is_a_start_error(tmp_path: Path) -> None:
    entry = {"type": "http", "url": f"http://127.0.0.1:{free_port()}/mcp"}
    host = McpHost([parse_server("web", entry, "cfg")], workspace=tmp_path, startup_s=5.0)
    with pytest.raises(
        McpStartError, match=r"^mcp server 'web' \(cfg\): failed to start: "
    ) as info:
        host.start()
    assert "\n" not in str(info.value)
