"""The MCP server of `metis faults`' MCP rows (the SDK's MCPServer over stdio).

    python -m metis_studies.faults._mcp_server LOG

`append` adds a line to LOG (the effect the rows count), `die` ends the
process in the middle of its call, `hang` never answers, `malformed`
returns structured content that breaks its own output schema.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("faults")
_LOG: list[str] = []


class Count(BaseModel):
    count: int


@server.tool()
def append(letter: str) -> str:
    """Append a letter to the log."""
    with open(_LOG[0], "a", encoding="utf-8") as fh:
        fh.write(letter + "\n")
    return f"appended {letter}"


@server.tool()
def die() -> str:
    """The server exits in the middle of this call."""
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def hang() -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "unreachable"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def malformed() -> Count:
    """Structured content of the wrong type."""
    return Count.model_construct(count="many")  # type: ignore[arg-type]


if __name__ == "__main__":
    _LOG.append(sys.argv[1])
    server.run("stdio")
