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

from ._classes import (
    CLASSES_KEY,
    Annotations,
    Declared,
    argument_paths,
    parse_declarations,
    tool_class,
)
from ._config import (
    PROJECT_FILE,
    Approval,
    McpSetup,
    ServerConfig,
    expand,
    normalize_name,
    parse_server,
    project_file,
    resolve_servers,
    servers_for_surface,
    servers_of,
    tool_name,
)
from ._host import (
    STARTUP_TIMEOUT_ENV,
    TOOL_TIMEOUT_ENV,
    ListedTool,
    McpCallError,
    McpHost,
    McpStartError,
)
from ._results import to_output
from ._setup import (
    Sources,
    Started,
    header_meta,
    read_config_arg,
    read_setup,
    server_env,
    start_mcp,
)
from ._tool import McpTool, mcp_tools

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
