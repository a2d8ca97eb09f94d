"""MCP servers' tools through the same registry, gate and scheduler (specs/mcp.md).

- Configuration (`_config`): `.mcp.json`, `mcpServers` in settings files,
  `--mcp-config`; `${VAR}` expansion; project approval and server policy.
- The host (`_host`): every server's SDK session on a thread of its own,
  started with timeouts, reconnected when it drops; stdio servers in process
  groups that die with the run (`_stdio`).
- The tools (`_tool`): `mcp__<server>__<tool>`, classified from their
  annotations (`_classes`), arguments validated against their schema
  (`_schema`), results mapped to the provider's result blocks (`_results`).

The SDK (`mcp`) is imported only when a server is started.
"""

from ._classes import CLASSES_KEY
from ._classes import Annotations
from ._classes import Declared
from ._classes import argument_paths
from ._classes import parse_declarations
from ._classes import tool_class
from ._config import PROJECT_FILE
from ._config import Approval
from ._config import McpSetup
from ._config import ServerConfig
from ._config import expand
from ._config import normalize_name
from ._config import parse_server
from ._config import project_file
from ._config import resolve_servers
from ._config import servers_for_surface
from ._config import servers_of
from ._config import tool_name
from ._host import STARTUP_TIMEOUT_ENV
from ._host import TOOL_TIMEOUT_ENV
from ._host import ListedTool
from ._host import McpCallError
from ._host import McpHost
from ._host import McpStartError
from ._results import to_output
from ._setup import Sources
from ._setup import Started
from ._setup import header_meta
from ._setup import read_config_arg
from ._setup import read_setup
from ._setup import server_env
from ._setup import start_mcp
from ._tool import McpTool
from ._tool import mcp_tools

__all__ = [
    "CLASSES_KEY",
    "PROJECT_FILE",
    "STARTUP_TIMEOUT_ENV",
    "TOOL_TIMEOUT_ENV",
    "Annotations",
    "Approval",
    "Declared",
    "ListedTool",
    "McpCallError",
    "McpHost",
    "McpSetup",
    "McpStartError",
    "McpTool",
    "ServerConfig",
    "Sources",
    "Started",
    "argument_paths",
    "expand",
    "header_meta",
    "mcp_tools",
    "normalize_name",
    "parse_declarations",
    "parse_server",
    "project_file",
    "read_config_arg",
    "read_setup",
    "resolve_servers",
    "server_env",
    "servers_for_surface",
    "servers_of",
    "start_mcp",
    "to_output",
    "tool_class",
    "tool_name",
]
