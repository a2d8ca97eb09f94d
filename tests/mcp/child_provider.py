"""A scripted provider for a child agent (ProviderConfig kind `factory`):
it calls an MCP tool in its surface and one outside it, then answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock


def provider(info: Mapping[str, Any]) -> ScriptedProvider:
    return ScriptedProvider(
        [
            (
                ToolUseBlock("c1", "mcp__fixture__lookup", {"key": "child"}),
                ToolUseBlock("c2", "mcp__fixture__append", {"path": "x.txt", "text": "no"}),
            ),
            (TextBlock("child done"),),
        ]
    )
