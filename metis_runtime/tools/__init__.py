"""Tools: the interface, the registry, the built-ins and background jobs."""

from ._base import EVERYTHING
from ._base import Classification
from ._base import Tool
from ._base import ToolContext
from ._base import ToolInput
from ._base import ToolOutput
from ._base import ToolSpec
from ._bash import BashTool
from ._files import FileTransaction
from ._files import atomic_write
from ._files import place_symlink
from ._files import resolve_path
from ._fs import EditTool
from ._fs import GlobTool
from ._fs import GrepTool
from ._fs import LsTool
from ._fs import ReadTool
from ._fs import WriteTool
from ._jobs import JobCallback
from ._jobs import JobManager
from ._registry import ENTRY_POINT_GROUP
from ._registry import PluginError
from ._registry import ToolRegistry
from ._registry import UnknownToolError
from ._registry import builtin_tools

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
