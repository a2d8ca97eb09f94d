"""The MCP server explore's MCP workload talks to (the SDK's `MCPServer`, over stdio).

    python -m metis_studies.explore._mcp_server LOG

`lookup` and `slow` are read-only (Safe), `purge` read-only but destructive
(Exclusive: the destructive hint wins), `reveal` unannotated (Exclusive; the
workload's settings deny it) appends a line to LOG before it answers (the
calls the server saw, not the runtime's word), `crash` kills the server
mid-call.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("explore")
_READ = ToolAnnotations(readOnlyHint=True)


@server.tool(annotations=_READ)
def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    return f"value of {key}"


@server.tool(annotations=_READ)
async def slow(seconds: float) -> str:
    """Sleep, then answer (read-only: Safe, runs beside other Safe calls)."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def purge(name: str) -> str:
    """Claims read-only, but destructive too: Exclusive."""
    return f"purged {name}"


@server.tool()
def reveal(name: str) -> str:
    """What the settings deny: each call is logged before it answers."""
    with open(sys.argv[1], "a", encoding="utf-8") as fh:
        fh.write(f"reveal {name}\n")
    return f"the {name} secret"


@server.tool()
def crash() -> str:
    """The server process dies mid-call."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
