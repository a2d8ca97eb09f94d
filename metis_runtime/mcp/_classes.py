"""How an MCP call is classified: its interference class, its kind, its paths.

- Class (specs/scheduler.md) from the tool's annotations, which are hints
  from the server and untrusted (MCP spec, "Tool annotations"): Safe only for
  `readOnlyHint: true` without `destructiveHint: true`; otherwise Exclusive,
  unless a settings entry (`mcpToolClasses`) declares Queue (with a key) or
  Background for the tool. An unannotated tool is Exclusive. Within a run a
  tool's class only ever gets stricter (a reconnected server cannot loosen it).
- Kind: always `exec`, whatever the annotations say, so a hint can never
  turn a deny or an ask into an allow (Claude Code gates MCP tools the same
  way: an MCP call asks unless a rule allows it).
- Paths: every argument that names a path (a path-like field name, or a
  value that starts `/`, `~`, `./`, `../` or `file://`), resolved against
  the workspace, so the gate's protected-path, secret and scope checks see it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from urllib.parse import urlsplit

from attrs import frozen

from metis_trace import CallClass

from .._errors import ConfigError
from ..permissions._rules import mcp_matches
from ._config import shown

CLASSES_KEY = "mcpToolClasses"
_PATH_FIELD = re.compile(
    r"(?:^|_)(?:path|paths|file|files|filename|filenames|filepath|dir|dirs|directory|"
    r"directories|folder|folders|cwd|root|workdir)(?:_|$)"
)
_PATH_VALUE = ("/", "~", "./", "../", "file://")
_MAX_DEPTH = 6


@frozen
class Annotations:
    """The four hints of the MCP spec (None: not given)."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    @classmethod
    def of(cls, raw: Any) -> Annotations:
        """From an SDK `ToolAnnotations` (or None); a hint that is not a
        boolean counts as not given."""

        def flag(name: str) -> bool | None:
            value = getattr(raw, name, None)
            return value if isinstance(value, bool) else None

        return cls(
            flag("read_only_hint"),
            flag("destructive_hint"),
            flag("idempotent_hint"),
            flag("open_world_hint"),
        )

    def to_json(self) -> dict[str, bool]:
        names = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
        values = (self.read_only, self.destructive, self.idempotent, self.open_world)
        return {n: v for n, v in zip(names, values, strict=True) if v is not None}


@frozen
class Declared:
    """A settings entry's class for matching tools: Queue (key) or Background."""

    pattern: str
    cls: CallClass
    key: str | None = None


def parse_declarations(files: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[Declared, ...]:
    """`"mcpToolClasses": {"mcp__db__query": "queue:db", "mcp__ci": "background"}`:
    patterns in the gate's MCP rule forms; values `queue` (keyed by the
    server), `queue:<key>`, `background` or `exclusive`. Later files first."""
    out: list[Declared] = []
    for source, data in reversed(files):
        table = data.get(CLASSES_KEY, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: {CLASSES_KEY}: must be an object")
        for pattern, value in table.items():
            where = f"{source}: {CLASSES_KEY}.{shown(pattern)}"
            if not pattern.lower().startswith("mcp__"):
                raise ConfigError(f"{where}: must name MCP tools (mcp__<server>[__<tool>])")
            if not isinstance(value, str):
                raise ConfigError(f"{where}: must be a string")
            kind, _, key = value.partition(":")
            if kind == "queue":
                server = pattern.split("__")[1] if pattern.count("__") >= 1 else pattern
                out.append(Declared(pattern, CallClass.QUEUE, f"mcp:{key or server}"))
            elif kind in ("background", "exclusive") and not key:
                out.append(Declared(pattern, CallClass(kind)))
            else:
                raise ConfigError(
                    f"{where}: must be queue, queue:<key>, background or exclusive, got {value!r}"
                )
    return tuple(out)


def tool_class(
    name: str, annotations: Annotations, declared: Sequence[Declared] = ()
) -> tuple[CallClass, str | None]:
    """The class (and Queue key) of an MCP tool."""
    for entry in declared:
        if mcp_matches(entry.pattern, name):
            return entry.cls, entry.key
    if annotations.read_only is True and annotations.destructive is not True:
        return CallClass.SAFE, None
    return CallClass.EXCLUSIVE, None


_STRICTNESS = {
    CallClass.SAFE: 0,
    CallClass.QUEUE: 1,
    CallClass.BACKGROUND: 1,
    CallClass.EXCLUSIVE: 2,
}


def stricter(
    old: tuple[CallClass, str | None], new: tuple[CallClass, str | None]
) -> tuple[CallClass, str | None]:
    """Of two classes of one tool, the one that allows less overlap."""
    return new if _STRICTNESS[new[0]] > _STRICTNESS[old[0]] else old


def _path_field(name: str) -> bool:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return bool(_PATH_FIELD.search(snake))


def _strings(value: object, named: bool, depth: int = 0) -> Iterator[tuple[str, bool]]:
    """Every string in an argument, with whether a path-like field holds it."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        yield value, named
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, named, depth + 1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, named or _path_field(str(key)), depth + 1)


def _as_path(text: str, workspace: Path) -> Path | None:
    if not text or "\x00" in text or len(text) > 4096:
        return None
    if text.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            return None
        text = unquote(parts.path)
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        path = workspace / path
    return Path(os.path.realpath(path))


def argument_paths(arguments: Mapping[str, Any], workspace: Path) -> tuple[Path, ...]:
    """The resolved paths a call's arguments name (in order, without repeats)."""
    found: dict[Path, None] = {}
    for key, value in arguments.items():
        for text, named in _strings(value, _path_field(str(key))):
            if named or text.startswith(_PATH_VALUE):
                path = _as_path(text, workspace)
                if path is not None:
                    found[path] = None
    return tuple(found)
