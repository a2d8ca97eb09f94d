"""From the command line's sources to running servers and registry tools.

`read_setup` reads the sources (hardened reading, one-line errors);
`start_mcp` filters each stdio server's environment as the tools' is
filtered, starts the host and returns the tools to register; `header_meta`
is what the trace header records about them (specs/trace-format.md, `meta.mcp`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from .._errors import ConfigError
from ._classes import Declared
from ._classes import parse_declarations
from ._config import McpSetup
from ._config import ServerConfig
from ._config import project_file
from ._config import resolve_servers
from ._host import McpHost
from ._tool import McpTool
from ._tool import mcp_tools


def _json(path: str) -> Any:
    from metis_trace import InputError

    from .._input import read_input_json

    try:
        return read_input_json(path)
    except InputError as exc:
        raise ConfigError(str(exc)) from exc


def read_config_arg(arg: str) -> tuple[str, Any]:
    """A `--mcp-config` value: a file, or an inline JSON object."""
    if arg.lstrip().startswith("{"):
        from metis_trace import InputError
        from metis_trace import decode_json

        try:
            return "--mcp-config (inline JSON)", decode_json(arg, source="--mcp-config")
        except InputError as exc:
            raise ConfigError(str(exc)) from exc
    return arg, _json(arg)


def read_settings(paths: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        data = _json(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: must be a JSON object")
        out.append((path, data))
    return out


@frozen
class Sources:
    """What `metis run` was given, kept in the run's journal for `--resume`."""

    configs: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    strict: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"configs": list(self.configs), "strict": self.strict}


def read_setup(
    workspace: str | os.PathLike[str],
    sources: Sources,
    levels: Sequence[tuple[str, str, Mapping[str, Any]]] | None = None,
) -> tuple[McpSetup, tuple[Declared, ...]]:
    """The servers to start and the settings' class declarations.

    `levels` is the settings hierarchy as the permission gate read it
    (`Loaded.mcp_levels()`: one reader serves both): its restriction and
    approval keys decide which servers start. None: only the `--settings`
    files' keys."""
    settings = read_settings(sources.settings)
    configs = [read_config_arg(a) for a in sources.configs]
    project: tuple[str, Any] | None = None
    path = project_file(workspace)
    if not sources.strict and path.is_file():
        project = (str(path), _json(str(path)))
    setup = resolve_servers(
        configs=configs, settings=settings, project=project, strict=sources.strict, levels=levels
    )
    return setup, parse_declarations(settings)


def server_env(
    server: ServerConfig, base: Mapping[str, str] | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """A stdio server's environment: the tools' (`tool_env`: no secret-named
    variable unless `--pass-env` names it) plus its own `env` entries under
    the same rule, and without an entry whose value holds a credential
    (unless passed). Also the names withheld, for the user."""
    from metis_trace import find_credentials

    from ..agents._process import PASSTHROUGH_ENV
    from ..agents._process import tool_env

    env = tool_env(base, server.env)
    passed = {
        n.strip()
        for n in (os.environ if base is None else base).get(PASSTHROUGH_ENV, "").split(",")
        if n.strip()
    }
    for name, value in server.env.items():
        if name in env and name not in passed and find_credentials(value):
            del env[name]
    withheld = tuple(sorted(n for n in server.env if n not in env))
    return env, withheld


@frozen
class Started:
    host: McpHost
    tools: tuple[McpTool, ...]
    notes: tuple[str, ...]
    declared: tuple[Declared, ...] = ()

    def for_children(self) -> dict[str, Any]:
        """The `AgentSupervisor` arguments that let a child use these servers."""
        return {
            "mcp_servers": {s.name: dict(s.raw) for s in self.host.servers},
            "mcp_classes": tuple((d.pattern, d.cls.value, d.key) for d in self.declared),
        }


def start_mcp(
    servers: Sequence[ServerConfig],
    workspace: str | os.PathLike[str],
    declared: Sequence[Declared] = (),
    *,
    base_env: Mapping[str, str] | None = None,
    startup_s: float | None = None,
    tool_s: float | None = None,
) -> Started:
    """Start the servers (`McpStartError` if one cannot) and make their tools."""
    notes: list[str] = []
    envs: dict[str, dict[str, str]] = {}
    for server in servers:
        if server.transport != "stdio":
            continue
        env, withheld = server_env(server, base_env)
        envs[server.name] = env
        for name in withheld:
            notes.append(
                f"mcp server '{server.name}': env {name} withheld (it names or holds a "
                f"secret; --pass-env {name} passes it)"
            )
    host = McpHost(servers, workspace=workspace, envs=envs, startup_s=startup_s, tool_s=tool_s)
    listed = host.start()
    notes.extend(host.notes)
    return Started(host, mcp_tools(host, listed, declared), tuple(notes), tuple(declared))


def header_meta(started: Started) -> dict[str, Any]:
    """`meta.mcp` of the trace header: each server (name, transport, where it
    was configured) and each tool (server, the server's name for it, its
    annotations, the class it runs in). No env values, no headers."""
    return {
        "servers": {
            s.name: {"transport": s.transport, "source": s.source} for s in started.host.servers
        },
        "tools": {
            t.name: {
                "server": t.listed.server,
                "tool": t.listed.tool,
                "annotations": t.listed.annotations.to_json(),
                "class": t.call_class[0].value,
                "key": t.call_class[1],
            }
            for t in started.tools
        },
    }
