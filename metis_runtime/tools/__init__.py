"""Tools: the interface, the registry, the built-ins and background jobs."""

from ._base import (
    EVERYTHING,
    Classification,
    Tool,
    ToolContext,
    ToolInput,
    ToolOutput,
    ToolSpec,
)
from ._bash import BashTool
from ._files import FileTransaction, atomic_write, place_symlink, resolve_path
from ._fs import EditTool, GlobTool, GrepTool, LsTool, ReadTool, WriteTool
from ._jobs import JobCallback, JobManager
from ._registry import (
    ENTRY_POINT_GROUP,
    PluginError,
    ToolRegistry,
    UnknownToolError,
    builtin_tools,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "EVERYTHING",
    "BashTool",
    "Classification",
    "EditTool",
    "FileTransaction",
    "GlobTool",
    "GrepTool",
    "JobCallback",
    "JobManager",
    "LsTool",
    "PluginError",
    "ReadTool",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolOutput",
    "ToolRegistry",
    "ToolSpec",
    "UnknownToolError",
    "WriteTool",
    "atomic_write",
    "builtin_tools",
    "place_symlink",
    "resolve_path",
]
