"""The MCP host against a real server over stdio: start, list, call, the
result kinds, timeouts, a crash mid-call (an error, then a reconnect), the
process group's end, start failures as one line (metis_runtime/mcp/_host.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from metis_runtime.mcp import McpCallError
from metis_runtime.mcp import McpHost
from metis_runtime.mcp import McpStartError
from metis_runtime.mcp import McpTool
from metis_runtime.mcp import mcp_tools
from metis_runtime.mcp import parse_server
from tests._procs import alive

from .conftest import base_env
from .conftest import stdio_server


@pytest.fixture(scope="module")
def host(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[McpHost, dict[str, McpTool], Path]]:
    ws = tmp_path_factory.mktemp("ws")
    log = ws / "log.txt"
    server = stdio_server(MCP_FIXTURE_LOG=str(log))
    mcp = McpHost(
        [server], workspace=ws, envs={"fixture": {**base_env(), **server.env}}, tool_s=2.0
    )
    listed = mcp.start()
    try:
        yield mcp, {t.name: t for t in mcp_tools(mcp, listed)}, ws
    finally:
        mcp.close()


def call(tool: McpTool, args: dict[str, object]) -> tuple[str, bool]:
    out = asyncio.run(tool.run(args, None))  # type: ignore[arg-type]
    return out.content, out.is_error


def test_listing_names_annotations_and_refused_schema(host) -> None:  # type: ignore[no-untyped-def]
    mcp, tools, _ = host
    assert {"mcp__fixture__lookup", "mcp__fixture__purge", "mcp__fixture__append"} <= set(tools)
    assert "mcp__fixture__broken_schema" not in tools
    assert any("broken_schema: not offered" in n and "properties/x/type" in n for n in mcp.notes)
    assert tools["mcp__fixture__lookup"].listed.annotations.read_only is True
    assert tools["mcp__fixture__lookup"].spec.description == "Look a key up (read-only)."


def test_text_structured_error_and_media(host) -> None:  # type: ignore[no-untyped-def]
    _, tools, _ = host
    assert call(tools["mcp__fixture__lookup"], {"key": "k"}) == ("value of k", False)
    text, err = call(tools["mcp__fixture__report"], {})
    assert not err and '"count": 3' in text
    text, err = call(tools["mcp__fixture__fail"], {"reason": "r"})
    assert err and "fail" in text
    text, err = call(tools["mcp__fixture__picture"], {})
    assert not err and text.startswith("[image image/png, 32 bytes, sha256 ")
    assert "the notes" in text


def test_malformed_result_is_an_error(host) -> None:  # type: ignore[no-untyped-def]
    _, tools, _ = host
    with pytest.raises(McpCallError, match=r"malformed result: .*bad_report"):
        call(tools["mcp__fixture__bad_report"], {})


def test_arguments_checked_against_the_schema(host) -> None:  # type: ignore[no-untyped-def]
    from metis_runtime import ToolInputError

    _, tools, _ = host
    with pytest.raises(
        ToolInputError, match="mcp__fixture__slow: field 'seconds': 'x' is not of type 'number'"
    ):
        tools["mcp__fixture__slow"].validate({"seconds": "x"})
    with pytest.raises(ToolInputError, match="'key' is a required property"):
        tools["mcp__fixture__lookup"].validate({})


def test_slow_call_times_out_and_the_server_stays(host) -> None:  # type: ignore[no-untyped-def]
    _, tools, _ = host
    started = time.monotonic()
    with pytest.raises(McpCallError, match=r"no result within 2s \(MCP_TOOL_TIMEOUT\)"):
        call(tools["mcp__fixture__slow"], {"seconds": 30})
    assert time.monotonic() - started < 10
    assert call(tools["mcp__fixture__lookup"], {"key": "still"}) == ("value of still", False)


def test_cancelled_call_leaves_the_server_usable(host) -> None:  # type: ignore[no-untyped-def]
    _, tools, _ = host

    async def cancel_it() -> None:
        task = asyncio.ensure_future(tools["mcp__fixture__slow"].run({"seconds": 30}, None))  # type: ignore[arg-type]
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    assert call(tools["mcp__fixture__lookup"], {"key": "again"}) == ("value of again", False)


def test_server_runs_in_its_own_group_in_the_workspace(host) -> None:  # type: ignore[no-untyped-def]
    _, tools, ws = host
    text, _ = call(tools["mcp__fixture__whoami"], {})
    pid, pgid, cwd = text.split(" ", 2)
    assert pid == pgid and int(pgid) != os.getpgrp()
    assert Path(cwd) == Path(os.path.realpath(ws))


def test_crash_mid_call_is_an_error_then_reconnects(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    server = stdio_server(MCP_FIXTURE_LOG=str(log))
    with McpHost(
        [server],
        workspace=tmp_path,
        envs={"fixture": {**base_env(), **server.env}},
        max_reconnects=1,
    ) as mcp:
        tools = {t.name: t for t in mcp_tools(mcp, mcp.start())}
        first, _ = call(tools["mcp__fixture__whoami"], {})
        with pytest.raises(McpCallError, match="closed the connection during the call"):
            call(tools["mcp__fixture__crash"], {})
        second, _ = call(tools["mcp__fixture__whoami"], {})  # a new process answers
        assert first.split()[0] != second.split()[0]
        assert log.read_text().count("crash") == 1  # the crashed call was not sent again
        with pytest.raises(McpCallError):
            call(tools["mcp__fixture__crash"], {})
        with pytest.raises(McpCallError, match="is down \\(no reconnects left\\)"):
            call(tools["mcp__fixture__lookup"], {"key": "k"})


def test_close_stops_the_process_group(tmp_path: Path) -> None:
    server = stdio_server()
    mcp = McpHost([server], workspace=tmp_path, envs={"fixture": base_env()})
    tools = {t.name: t for t in mcp_tools(mcp, mcp.start())}
    pgid = int(call(tools["mcp__fixture__whoami"], {})[0].split()[1])
    mcp.close()
    assert not alive(pgid)
    mcp.close()  # idempotent


def test_server_dies_with_the_runtime(tmp_path: Path) -> None:
    """SIGKILL the process that holds the host: PR_SET_PDEATHSIG ends the server."""
    script = f"""
import sys, asyncio
sys.path.insert(0, {str(Path(__file__).parents[2])!r})
from metis_runtime.mcp import McpHost, mcp_tools, parse_server
server = parse_server("f", {{"command": sys.executable, "args": [{str(Path(__file__).parent / "servers" / "fixture_server.py")!r}]}}, "t")
host = McpHost([server], workspace={str(tmp_path)!r}, envs={{"f": {{"PATH": "/usr/bin:/bin"}}}})
tools = {{t.name: t for t in mcp_tools(host, host.start())}}
out = asyncio.run(tools["mcp__f__whoami"].run({{}}, None))
print(out.content.split()[1], flush=True)
import time; time.sleep(60)
"""
    import select
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the runtime process did not report its server"
        pgid = int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not alive(pgid):  # the server leads its group: pgid is its pid
            return
        time.sleep(0.05)
    os.killpg(pgid, signal.SIGKILL)
    pytest.fail("the server outlived the runtime")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"command": "/nonexistent/mcp-server"},
            r"failed to start: command not found: /nonexistent/mcp-server",
        ),
        (
            {
                "command": sys.executable,
                "args": [
                    "-c",
                    "import sys; print('boom: no config', file=sys.stderr); sys.exit(4)",
                ],
            },
            r"failed to start: .*\(stderr: boom: no config\)",
        ),
        (
            {"command": "sleep", "args": ["30"]},
            r"failed to start: no answer within 1s \(MCP_TIMEOUT\)",
        ),
    ],
)
def test_start_failure_is_one_line(tmp_path: Path, entry: dict[str, object], message: str) -> None:
    server = parse_server("bad", entry, "cfg.json")
    mcp = McpHost([server], workspace=tmp_path, envs={"bad": base_env()}, startup_s=1.0)
    started = time.monotonic()
    with pytest.raises(McpStartError, match=r"^mcp server 'bad' \(cfg.json\): " + message) as info:
        mcp.start()
    assert "\n" not in str(info.value) and time.monotonic() - started < 15
