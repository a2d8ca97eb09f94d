"""MCP costs, side by side in one run: the time to start a stdio server
(spawn, handshake, listing), and the cost of one call through the runtime's
`McpTool` (argument validation, the hop to the host thread and back, result
mapping) against the SDK's own `Client` calling the same server directly, over
stdio and over Streamable HTTP on 127.0.0.1. Ratios and figures go to
`benchmark.extra_info`; nothing here asserts a time. The servers are
tests/mcp/servers/fixture_server.py."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

from metis_runtime.mcp import McpHost
from metis_runtime.mcp import McpTool
from metis_runtime.mcp import mcp_tools
from metis_runtime.mcp import parse_server
from tests.mcp.conftest import SERVER  # `python -m pytest` runs from the root
from tests.mcp.conftest import start_http  # `python -m pytest` runs from the root
from tests.mcp.conftest import stop  # `python -m pytest` runs from the root

CALLS = 200
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _lookup(host: McpHost) -> McpTool:
    return {t.name: t for t in mcp_tools(host, host.start())}[f"mcp__{_name(host)}__lookup"]


def _name(host: McpHost) -> str:
    return host.servers[0].name


async def _ours(tool: McpTool, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        await tool.run({"key": str(i)}, None)  # type: ignore[arg-type]
    return (time.perf_counter() - start) / n


async def _sdk(server: Any, n: int) -> float:
    from mcp import Client

    async with Client(server) as client:
        await client.list_tools()
        start = time.perf_counter()
        for i in range(n):
            await client.call_tool("lookup", {"key": str(i)})
        return (time.perf_counter() - start) / n


def _pair(tool: McpTool, sdk_server: Any) -> dict[str, float]:
    ours = min(asyncio.run(_ours(tool, CALLS)) for _ in range(3))
    theirs = min(asyncio.run(_sdk(sdk_server, CALLS)) for _ in range(3))
    return {"metis_us": ours * 1e6, "sdk_us": theirs * 1e6, "ratio": ours / theirs}


def test_stdio_start_and_call(benchmark: Any) -> None:
    from mcp import StdioServerParameters

    entry = {"command": sys.executable, "args": [str(SERVER)]}
    starts = []
    with tempfile.TemporaryDirectory() as ws:
        for _ in range(3):
            host = McpHost([parse_server("fx", entry, "bench")], workspace=ws, envs={"fx": ENV})
            t0 = time.perf_counter()
            tool = _lookup(host)
            starts.append(time.perf_counter() - t0)
            host.close()
        host = McpHost([parse_server("fx", entry, "bench")], workspace=ws, envs={"fx": ENV})
        tool = _lookup(host)
        try:
            params = StdioServerParameters(command=sys.executable, args=[str(SERVER)], cwd=ws)
            pair = _pair(tool, params)
            benchmark.pedantic(lambda: asyncio.run(_ours(tool, 20)), rounds=3, iterations=1)
        finally:
            host.close()
    benchmark.extra_info.update({"start_s_median": statistics.median(starts), **pair})
    print(f"\nstdio: start {statistics.median(starts):.2f}s; call {pair}")


def test_http_call(benchmark: Any) -> None:
    proc, port = start_http()
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as ws:
            host = McpHost([parse_server("web", {"url": url}, "bench")], workspace=ws)
            tool = _lookup(host)
            try:
                pair = _pair(tool, url)
                benchmark.pedantic(lambda: asyncio.run(_ours(tool, 20)), rounds=3, iterations=1)
            finally:
                host.close()
    finally:
        stop(proc)
    benchmark.extra_info.update(pair)
    print(f"\nhttp: call {pair}")
