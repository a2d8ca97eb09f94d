"""The MCP rows: a real server (`_mcp_server.py`, the SDK's MCPServer) over
stdio that dies mid-call, hangs, and returns malformed results."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from metis_runtime.providers import ToolUseBlock

from .._sync import run_sync
from ._harness import DONE
from ._harness import WAIT
from ._harness import FaultRow
from ._harness import Harness
from ._harness import bash
from ._harness import log_line
from ._harness import row_of
from ._harness import scripted


@contextlib.contextmanager
def _mcp_server(h: Harness, tool_s: float = WAIT) -> Iterator[None]:
    """The row's MCP server started, its tools in the harness's registry."""
    from metis_runtime.mcp import McpHost
    from metis_runtime.mcp import mcp_tools
    from metis_runtime.mcp import parse_server

    entry = {
        "command": sys.executable,
        "args": ["-m", "metis_studies.faults._mcp_server", str(h.ws / "log.txt")],
    }
    server = parse_server("faults", entry, "metis faults")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(sys.path)}
    host = McpHost([server], workspace=h.ws, envs={"faults": env}, tool_s=tool_s)
    try:
        h.extra = list(mcp_tools(host, host.start()))
        yield
    finally:
        host.close()


def mcp(call_id: str, tool: str, **input: Any) -> ToolUseBlock:
    return ToolUseBlock(call_id, f"mcp__faults__{tool}", input)


def mcp_server_dies(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "mcp-dies", dispatcher=dispatcher)
    batch = (bash("t1", log_line("a")), mcp("t2", "die"), bash("t3", log_line("c")))
    with _mcp_server(h):
        run_sync(h.run(scripted(batch, (mcp("t4", "append", letter="d"),), DONE)))
    return row_of(
        "an MCP server dies mid-call, then is reconnected",
        h,
        "1.0 ok, 1.1 error, 1.2 ok, 2.0 ok; run completed",
        {"a": 1, "c": 1, "d": 1},
    )


def mcp_server_hangs(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "mcp-hangs", dispatcher=dispatcher)
    with _mcp_server(h, tool_s=0.5):
        run_sync(h.run(scripted((mcp("t1", "hang"), bash("t2", log_line("c"))), DONE)))
    return row_of(
        "an MCP call hangs past its timeout",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"c": 1},
    )


def mcp_malformed_result(workdir: Path, dispatcher: str) -> FaultRow:
    h = Harness(workdir, "mcp-malformed", dispatcher=dispatcher)
    batch = (mcp("t1", "malformed"), mcp("t2", "append", letter="b"))
    with _mcp_server(h):
        run_sync(h.run(scripted(batch, DONE)))
    return row_of(
        "an MCP server returns a malformed result",
        h,
        "1.0 error, 1.1 ok; run completed",
        {"b": 1},
    )
