"""The MCP server explore's MCP workload talks to (the SDK's `MCPServer`, over stdio).

    python -m metis_studies.explore._mcp_server LOG

Each call appends one line to LOG before it acts (the effects the workload
counts, seen by the server, not by the runtime): `lookup` and `slow` are
read-only (Safe), `purge` read-only but destructive (Exclusive: the
destructive hint wins), `append` unannotated (Exclusive) and writes a file,
`crash` kills the server mid-call.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("explore")
_READ = ToolAnnotations(readOnlyHint=True)


def _log(line: str) -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@server.tool(annotations=_READ)
def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    _log(f"lookup {key}")
    return f"value of {key}"


@server.tool(annotations=_READ)
async def slow(seconds: float) -> str:
    """Sleep, then answer (read-only)."""
    _log("slow start")
    await asyncio.sleep(seconds)
    _log("slow end")
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def purge(name: str) -> str:
    """Claims read-only, but destructive too."""
    _log(f"purge {name}")
    return f"purged {name}"


@server.tool()
def append(path: str, text: str) -> str:
    """Append a line to a file (unannotated)."""
    _log(f"append {path}")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return f"appended to {path}"


@server.tool()
def crash() -> str:
    """The server process dies mid-call."""
    _log("crash")
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
