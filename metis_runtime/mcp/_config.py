"""MCP server configuration, read the way Claude Code users write it.

Sources (code.claude.com/docs/en/mcp; /work/shared/reference section 7):

- `--mcp-config FILE` (or an inline JSON object): `{"mcpServers": {...}}`;
  `~/.claude.json` has that shape too, so `--mcp-config ~/.claude.json` brings
  the user-scope servers;
- `mcpServers` in a `--settings` file (a metis extension: Claude Code keeps
  servers out of settings.json, but the issue asks for it);
- `.mcp.json` at the workspace root: project servers run code from the
  repository, so, as Claude Code asks before it starts them, they start only
  when a settings file approves them (`enableAllProjectMcpServers`,
  `enabledMcpjsonServers`; `disabledMcpjsonServers` wins), a file of the
  settings hierarchy other than the project's own (`Approval.from_levels`).

A server entry: `{"type": "stdio", "command", "args", "env", "cwd"}` (type
may be omitted) or `{"type": "http", "url", "headers"}`. `${VAR}` and
`${VAR:-default}` expand in command, args, env, url and headers; an unset
variable without a default is an error (Claude Code passes the text on).
Policy keys from settings: `deniedMcpServers` and `allowedMcpServers`
(`{"serverName": ...}` entries; deny wins). Every problem is a `ConfigError`
whose one line names the file and the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import Literal

from attrs import field
from attrs import frozen

from .._errors import ConfigError

Transport = Literal["stdio", "http"]
PROJECT_FILE = ".mcp.json"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_EXPANSION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_KEYS = frozenset({"type", "command", "args", "env", "cwd"})
_HTTP_KEYS = frozenset({"type", "url", "headers", "headersHelper", "oauth"})
# Transports Claude Code knows that this client does not speak.
_UNSUPPORTED = {"sse": "the deprecated SSE transport", "ws": "WebSocket"}
MAX_TOOL_NAME = 64  # the providers' limit: ^[a-zA-Z0-9_-]{1,64}$


def shown(text: str) -> str:
    """`text` for a one-line message: control characters escaped."""
    if text.isprintable():
        return text
    return text.encode("unicode_escape").decode("ascii")


def normalize_name(name: str) -> str:
    """A server or tool name as it appears in `mcp__<server>__<tool>`:
    characters outside `[A-Za-z0-9_-]` become `_` (as Claude Code names them)."""
    return _NAME_CHARS.sub("_", name)


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{normalize_name(server)}__{normalize_name(tool)}"


@frozen
class ServerConfig:
    """One server, its variables expanded. `raw` is the entry as written
    (a child agent expands it again in its own environment); `source` names
    the file it came from."""

    name: str
    transport: Transport
    source: str
    raw: Mapping[str, Any] = field(repr=False)
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(factory=dict, repr=False)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(factory=dict, repr=False)

    @property
    def prefix(self) -> str:
        """`mcp__<server>__`: every tool name of this server starts with it."""
        return f"mcp__{normalize_name(self.name)}__"

    def describe(self) -> str:
        """What people see (no env values, no headers)."""
        if self.transport == "http":
            return shown(f"{self.name} (http {_without_userinfo(self.url)})")
        return shown(f"{self.name} (stdio {' '.join([self.command, *self.args])})")


def _without_userinfo(url: str) -> str:
    return re.sub(r"//[^/@]*@", "//", url, count=1)


def expand(text: str, where: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}` (a bare `$VAR` stays as written)."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        raise ConfigError(f"{where}: ${{{name}}} is not set and has no default")

    return _EXPANSION.sub(one, text)


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of strings")
    return list(value)


def _string_map(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where}: must be an object of strings")
    return dict(value)


def _expanded(values: Mapping[str, str], where: str, environ: Mapping[str, str]) -> dict[str, str]:
    return {k: expand(v, f"{where}.{shown(k)}", environ) for k, v in values.items()}


def parse_server(
    name: object, entry: object, source: str, environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """One entry of an `mcpServers` object."""
    env_in = os.environ if environ is None else environ
    if not isinstance(name, str) or not name or not normalize_name(name).strip("_-"):
        raise ConfigError(f"{source}: mcpServers: {name!r} is not a usable server name")
    where = f"{source}: mcpServers.{shown(name)}"
    if "__" in normalize_name(name):
        raise ConfigError(f"{where}: a server name may not contain '__' (mcp__<server>__<tool>)")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be an object")
    kind = entry.get("type", "http" if "url" in entry and "command" not in entry else "stdio")
    if kind in _UNSUPPORTED:
        raise ConfigError(f"{where}: type {kind!r} ({_UNSUPPORTED[kind]}) is not supported")
    if kind not in ("stdio", "http"):
        raise ConfigError(f"{where}: type must be 'stdio' or 'http', got {kind!r}")
    allowed = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    unknown = sorted(set(entry) - allowed)
    if unknown:
        fields = ", ".join(shown(str(k)) for k in unknown)
        raise ConfigError(f"{where}: unknown field(s) for a {kind} server: {fields}")
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{where}.command: must be a non-empty string")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}.cwd: must be a string")
        args = _strings(entry.get("args", []), f"{where}.args")
        env = _string_map(entry.get("env", {}), f"{where}.env")
        return ServerConfig(
            name,
            "stdio",
            source,
            entry,
            command=expand(command, f"{where}.command", env_in),
            args=tuple(expand(a, f"{where}.args", env_in) for a in args),
            env=_expanded(env, f"{where}.env", env_in),
            cwd=cwd,
        )
    for key in ("headersHelper", "oauth"):
        if key in entry:
            raise ConfigError(f"{where}.{key}: not supported (give the token in headers)")
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{where}.url: must be a non-empty string")
    url = expand(url, f"{where}.url", env_in)
    if not re.match(r"https?://", url):
        raise ConfigError(f"{where}.url: must be an http:// or https:// URL")
    headers = _string_map(entry.get("headers", {}), f"{where}.headers")
    return ServerConfig(
        name,
        "http",
        source,
        entry,
        url=url,
        headers=_expanded(headers, f"{where}.headers", env_in),
    )


def servers_of(
    data: object, source: str, *, key_required: bool, environ: Mapping[str, str] | None = None
) -> list[ServerConfig]:
    """The servers of one file's `mcpServers` object (absent: none, unless
    `key_required`, as for `--mcp-config` and `.mcp.json`)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: must be a JSON object")
    if "mcpServers" not in data:
        if key_required:
            raise ConfigError(f"{source}: has no mcpServers object")
        return []
    servers = data["mcpServers"]
    if not isinstance(servers, dict):
        raise ConfigError(f"{source}: mcpServers: must be an object")
    return [parse_server(n, e, source, environ) for n, e in servers.items()]


# Settings levels, most authoritative first (code.claude.com/docs/en/settings,
# "Settings precedence"): managed > command line > local > project > user.
LEVELS = ("managed", "cli", "local", "project", "user")
_APPROVALS = ("enableAllProjectMcpServers", "enabledMcpjsonServers", "allowedMcpServers")


@frozen
class Approval:
    """The settings keys that decide which servers may start.

    Restrictions (`deniedMcpServers`, `disabledMcpjsonServers`) apply from
    every level. Approvals (`enableAllProjectMcpServers`,
    `enabledMcpjsonServers`) apply from the managed, user and local levels and
    from `--settings`, not from the project's own committed
    `.claude/settings.json`: Claude Code honours those once its trust dialog
    is accepted, which metis does not model, and a repository must not
    approve the servers it ships (specs/mcp.md; the stricter table).
    `allowedMcpServers` is an allowlist: the most authoritative level that
    sets it decides (managed highest), and a project file's cannot widen it."""

    enable_all_project: bool = False
    enabled_project: frozenset[str] = frozenset()
    disabled_project: frozenset[str] = frozenset()
    allowed: frozenset[str] | None = None  # None: no allowlist
    denied: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, files: Sequence[tuple[str, Mapping[str, Any]]]) -> Approval:
        """Files named on the command line (every key applies)."""
        return cls.from_levels([(source, "cli", data) for source, data in files])

    @classmethod
    def from_levels(
        cls,
        files: Sequence[tuple[str, str, Mapping[str, Any]]],
        trusted: frozenset[str] = frozenset(),
    ) -> Approval:
        """Merged over `(source, level, data)` files (see the class doc); a
        project-level file whose source is in `trusted` (named with
        `--settings`) counts as the user's own."""
        named = {os.path.abspath(t) for t in trusted}
        enable_all = False
        enabled: set[str] = set()
        disabled: set[str] = set()
        denied: set[str] = set()
        allowlists: dict[str, set[str]] = {}
        notes: list[str] = []
        for source, level, data in files:
            flag = data.get("enableAllProjectMcpServers", False)
            if not isinstance(flag, bool):
                raise ConfigError(f"{source}: enableAllProjectMcpServers: must be true or false")
            disabled |= _names(data, "disabledMcpjsonServers", source)
            denied |= _server_names(data, "deniedMcpServers", source)
            approves = level != "project" or os.path.abspath(source) in named
            if not approves:
                ignored = [k for k in _APPROVALS if data.get(k) not in (None, False, [])]
                if ignored:
                    notes.append(
                        f"{source}: {', '.join(ignored)} not honoured: the project's own "
                        "settings cannot approve MCP servers (approve them in "
                        ".claude/settings.local.json, ~/.claude/settings.json or --settings)"
                    )
                continue
            enable_all = enable_all or flag
            enabled |= _names(data, "enabledMcpjsonServers", source)
            if "allowedMcpServers" in data:
                allowed_here = _server_names(data, "allowedMcpServers", source)
                allowlists.setdefault(level, set()).update(allowed_here)
        allowed = next((allowlists[lv] for lv in LEVELS if lv in allowlists), None)
        return cls(
            enable_all,
            frozenset(enabled),
            frozenset(disabled),
            None if allowed is None else frozenset(allowed),
            frozenset(denied),
            tuple(notes),
        )

    def project_approved(self, name: str) -> bool:
        if name in self.disabled_project:
            return False  # a rejection wins
        return self.enable_all_project or name in self.enabled_project

    def policy_refusal(self, name: str) -> str | None:
        if name in self.denied:
            return "denied by deniedMcpServers"
        if self.allowed is not None and name not in self.allowed:
            return "not in allowedMcpServers"
        return None


def _names(data: Mapping[str, Any], key: str, source: str) -> set[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: {key}: must be a list of server names")
    return set(value)


def _server_names(data: Mapping[str, Any], key: str, source: str) -> set[str]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{source}: {key}: must be a list")
    names: set[str] = set()
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) - {"serverName", "serverCommand", "serverUrl"}:
            raise ConfigError(f"{source}: {key}[{i}]: must be an object with serverName")
        name = item.get("serverName")
        if not isinstance(name, str):
            # serverCommand / serverUrl entries are not matched by this client:
            # refusing them beats silently allowing what they meant to restrict.
            raise ConfigError(f"{source}: {key}[{i}]: only serverName entries are supported")
        names.add(name)
    return names


@frozen
class McpSetup:
    """What `metis run` starts: the servers (by precedence, one per name),
    and the lines worth telling the user (skipped servers)."""

    servers: tuple[ServerConfig, ...]
    notes: tuple[str, ...] = ()


def resolve_servers(
    *,
    configs: Iterable[tuple[str, object]] = (),
    settings: Sequence[tuple[str, Mapping[str, Any]]] = (),
    project: tuple[str, object] | None = None,
    strict: bool = False,
    environ: Mapping[str, str] | None = None,
    levels: Sequence[tuple[str, str, Mapping[str, Any]]] | None = None,
) -> McpSetup:
    """Merge the sources: `--mcp-config` (`configs`: (source, parsed JSON))
    over `mcpServers` in `settings` (the `--settings` files) over the project
    file (`project`), one entry per name, the higher source winning whole;
    then the approval and policy keys of the settings hierarchy (`levels`:
    `(source, level, data)`, lowest authority first; None: of `settings`).
    `strict` (`--strict-mcp-config`): only `configs`."""
    approval = (
        Approval.from_settings(settings)
        if levels is None
        else Approval.from_levels(levels, frozenset(s for s, _ in settings))
    )
    chosen: dict[str, ServerConfig] = {}
    notes: list[str] = list(approval.notes)
    for source, data in configs:
        for server in servers_of(data, source, key_required=True, environ=environ):
            chosen.setdefault(server.name, server)
    if not strict:
        for source, data in settings:
            for server in servers_of(data, source, key_required=False, environ=environ):
                chosen.setdefault(server.name, server)
        if project is not None:
            source, data = project
            for server in servers_of(data, source, key_required=True, environ=environ):
                if server.name in chosen:
                    continue
                if not approval.project_approved(server.name):
                    notes.append(
                        f"{PROJECT_FILE} server '{server.name}' not started: approve it with "
                        f'"enabledMcpjsonServers": ["{server.name}"] (or '
                        '"enableAllProjectMcpServers": true) in .claude/settings.local.json, '
                        "~/.claude/settings.json or a --settings file"
                    )
                    continue
                chosen[server.name] = server
    servers: list[ServerConfig] = []
    prefixes: dict[str, str] = {}
    for server in chosen.values():
        refusal = approval.policy_refusal(server.name)
        if refusal is not None:
            notes.append(f"mcp server '{server.name}' not started: {refusal}")
            continue
        other = prefixes.get(server.prefix.lower())
        if other is not None:
            raise ConfigError(
                f"{server.source}: mcpServers.{server.name}: its tools would be named like "
                f"those of '{other}' ({server.prefix}...)"
            )
        prefixes[server.prefix.lower()] = server.name
        servers.append(server)
    return McpSetup(tuple(servers), tuple(notes))


def servers_for_surface(
    servers: Mapping[str, Mapping[str, Any]], surface: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The entries of the servers that have a tool in `surface` (a child
    agent's tool names): a child connects only to those."""
    names = [n.lower() for n in surface]
    return {
        name: dict(entry)
        for name, entry in servers.items()
        if any(n.startswith(f"mcp__{normalize_name(name)}__".lower()) for n in names)
    }


def project_file(workspace: str | os.PathLike[str]) -> Path:
    return Path(workspace) / PROJECT_FILE
