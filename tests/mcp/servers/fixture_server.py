"""A real MCP server (the SDK's MCPServer, FastMCP's new name in mcp 2) for
the tests: read-only, destructive, unannotated, slow, crashing, failing and
malformed tools, and content of every kind.

    python -m tests.mcp.servers.fixture_server [stdio | http PORT]

`MCP_FIXTURE_LOG` names a file each call appends a line to (the effects the
tests count); `MCP_FIXTURE_DIE_AT_START=1` makes it exit before it answers.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer
from mcp.types import EmbeddedResource
from mcp.types import ImageContent
from mcp.types import TextResourceContents
from mcp.types import ToolAnnotations
from mcp_types import Tool as WireTool
from pydantic import BaseModel

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 24).decode()


class Report(BaseModel):
    count: int
    label: str


class FixtureServer(MCPServer):
    """Adds one tool whose input schema is not valid JSON Schema."""

    async def list_tools(self) -> list[WireTool]:
        tools = await super().list_tools()
        bad = {"type": "object", "properties": {"x": {"type": "strnig"}}}
        return [*tools, WireTool(name="broken_schema", description="bad", input_schema=bad)]


server = FixtureServer("fixture")


def _log(line: str) -> None:
    path = os.environ.get("MCP_FIXTURE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    _log(f"lookup {key}")
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def purge(path: str) -> str:
    """Claims read-only, but also destructive."""
    _log(f"purge {path}")
    return f"purged {path}"


@server.tool()
def append(path: str, text: str) -> str:
    """Append a line to a file (unannotated)."""
    _log(f"append {path}")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text + "\n")
    return f"appended to {path}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(seconds: float) -> str:
    """Sleep, then answer (read-only)."""
    _log("slow start")
    await asyncio.sleep(seconds)
    _log("slow end")
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """The server process dies mid-call."""
    _log("crash")
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def fail(reason: str) -> str:
    """Always fails: an isError result."""
    raise ValueError(f"refused: {reason}")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def report() -> Report:
    """Structured content."""
    return Report(count=3, label="three")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def bad_report() -> Report:
    """Structured content that breaks its own output schema."""
    return Report.model_construct(count="many", label=7)  # type: ignore[arg-type]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def picture() -> list[Any]:
    """An image and an embedded text resource."""
    return [
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", text="the notes", mime_type="text/plain"
            ),
        ),
    ]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def env(name: str) -> str:
    """An environment variable of the server process (or <unset>)."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def header(name: str, ctx: Context) -> str:
    """A header of the HTTP request that carried this call (or <none>)."""
    request = ctx.request_context.request
    value = None if request is None else request.headers.get(name)
    return "<none>" if value is None else str(value)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami() -> str:
    """The server's pid, process group and working directory."""
    return f"{os.getpid()} {os.getpgrp()} {Path.cwd()}"


def main(argv: list[str]) -> None:
    if os.environ.get("MCP_FIXTURE_DIE_AT_START") == "1":
        print("fixture: told to die at start", file=sys.stderr)
        sys.exit(4)
    if argv[:1] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
