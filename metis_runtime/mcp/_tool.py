"""An MCP server's tool in the registry, beside the built-ins.

Named `mcp__<server>__<tool>`; classified by `_classes` (class from the
annotations or a settings entry, kind `exec`, the paths its arguments name);
run on the server through the `McpHost`; its result mapped by `_results`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from metis_trace import CallClass
from metis_trace import ToolKind

from ..tools import EVERYTHING
from ..tools import Classification
from ..tools import Tool
from ..tools import ToolContext
from ..tools import ToolInput
from ..tools import ToolOutput
from ..tools import ToolSpec
from ._classes import Declared
from ._classes import argument_paths
from ._classes import stricter
from ._classes import tool_class
from ._host import ListedTool
from ._host import McpHost
from ._results import to_output
from ._schema import ArgumentValidator


class McpTool(Tool):
    """One tool of one server. Its work runs in the server (another process,
    or across the network), so this loop is free while it runs."""

    out_of_process: ClassVar[bool] = True

    def __init__(
        self, listed: ListedTool, host: McpHost, declared: Sequence[Declared] = ()
    ) -> None:
        self.listed = listed
        self._host = host
        self.call_class: tuple[CallClass, str | None] = tool_class(
            listed.name, listed.annotations, declared
        )
        description = (
            listed.description or f"The tool '{listed.tool}' of MCP server '{listed.server}'."
        )
        self._spec = ToolSpec(listed.name, description, dict(listed.input_schema))
        self._arguments = ArgumentValidator(listed.name, listed.input_schema)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def server(self) -> str:
        return self.listed.server

    def tighten(self, cls: tuple[CallClass, str | None]) -> None:
        """A later listing's class: taken only if it is stricter."""
        self.call_class = stricter(self.call_class, cls)

    def validate(self, input: ToolInput) -> None:
        self._arguments.validate(input)

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EXEC  # annotations never loosen the gate

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.validate(input)
        cls, key = self.call_class
        paths = argument_paths(input, ctx.workspace)
        if cls is CallClass.BACKGROUND:
            return Classification(cls, key, ToolKind.EXEC, paths)  # not covered by SCHED-6
        # What a server reads or writes is not known from its arguments (nor is
        # its file system ours): the footprint is everything (SCHED-6).
        writes = () if cls is CallClass.SAFE else EVERYTHING
        return Classification(cls, key, ToolKind.EXEC, paths, reads=EVERYTHING, writes=writes)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        result = await self._host.call(self.listed.server, self.listed.tool, input)
        return to_output(result)


def mcp_tools(
    host: McpHost, listed: Sequence[ListedTool], declared: Sequence[Declared] = ()
) -> tuple[McpTool, ...]:
    return tuple(McpTool(t, host, declared) for t in listed)
