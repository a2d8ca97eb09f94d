"""Recorded exchanges (VCR cassette YAML) and replay scenarios.

A cassette is the format of `corpora/provider-streams`: `interactions[]`, each
with `request.uri` (which names the wire format), optional
`request.parsed_body`, `response.status.code` and `response.body.string` (the
raw SSE body). A scenario is a cassette plus `workspace.files` (relative path
-> content) to seed a temporary workspace, an optional `prompt` and
`description`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from pathlib import PurePosixPath
from typing import Any
from typing import Literal
from urllib.parse import urlsplit

from attrs import frozen

from metis_trace import InputError

from .._errors import ConfigError
from .._input import read_input_text
from .._yaml import load_yaml

WireFormat = Literal["anthropic", "openai-chat", "openai-responses"]

# URL path suffix -> wire format; the base URL is what precedes the suffix.
WIRE_SUFFIXES: tuple[tuple[str, WireFormat], ...] = (
    ("/v1/messages", "anthropic"),
    ("/chat/completions", "openai-chat"),
    ("/responses", "openai-responses"),
)

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


@frozen
class Interaction:
    uri: str
    wire: WireFormat
    base_url: str  # `uri` without the wire suffix and query: what a provider is given
    status: int
    body: str
    content_type: str = "text/event-stream"
    method: str = "POST"
    request_body: Mapping[str, Any] | None = None


@frozen
class Cassette:
    path: Path
    interactions: tuple[Interaction, ...]


@frozen
class Scenario:
    name: str
    path: Path
    workspace_files: dict[str, str]
    cassette: Cassette
    prompt: str = ""
    description: str = ""


def detect_wire(uri: str) -> tuple[WireFormat, str] | None:
    """The wire format a request URL speaks, and its base URL."""
    parts = urlsplit(uri)
    path = parts.path.rstrip("/")
    for suffix, wire in WIRE_SUFFIXES:
        if path.endswith(suffix):
            base = f"{parts.scheme}://{parts.netloc}{path[: -len(suffix)]}"
            return wire, base
    return None


class _Fields:
    """Typed access into the parsed YAML with errors naming file and field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path}: {where}: {message}")

    def get(
        self, node: Mapping[str, Any], key: str, where: str, kind: type, *, required: bool = True
    ) -> Any:
        here = f"{where}.{key}" if where else key
        if key not in node or node[key] is None:
            if required:
                raise self.error(here, "missing")
            return None
        value = node[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(here, f"must be a {_KIND_NAMES.get(kind, kind.__name__)}")
        return value


_KIND_NAMES = {dict: "mapping", list: "list", str: "string", int: "integer"}


def _read_yaml(path: Path, text: str | None = None, source: str | None = None) -> Any:
    """A regular file, bounded, as JSON-like data (`metis_runtime._yaml`);
    `text`: its text, already read (standard input is read once)."""
    try:
        text = read_input_text(path) if text is None else text
        return load_yaml(text, source=str(path) if source is None else source)
    except InputError as exc:
        raise ConfigError(str(exc)) from exc


def _interaction(f: _Fields, node: Any, where: str) -> Interaction:
    if not isinstance(node, dict):
        raise f.error(where, "must be a mapping")
    request = f.get(node, "request", where, dict)
    response = f.get(node, "response", where, dict)
    uri = f.get(request, "uri", f"{where}.request", str)
    detected = detect_wire(uri)
    if detected is None:
        raise f.error(
            f"{where}.request.uri",
            f"{uri!r} names no known wire format (/v1/messages, /chat/completions, /responses)",
        )
    method = f.get(request, "method", f"{where}.request", str, required=False) or "POST"
    body_node = f.get(response, "body", f"{where}.response", dict)
    body = f.get(body_node, "string", f"{where}.response.body", str)
    status_node = f.get(response, "status", f"{where}.response", dict, required=False)
    status = 200
    if status_node is not None:
        status = f.get(status_node, "code", f"{where}.response.status", int)
    content_type = "text/event-stream"
    headers = f.get(response, "headers", f"{where}.response", dict, required=False) or {}
    for name, value in headers.items():
        if str(name).lower() == "content-type":
            content_type = str(value[0] if isinstance(value, list) and value else value)
    parsed = f.get(request, "parsed_body", f"{where}.request", dict, required=False)
    return Interaction(
        uri=uri,
        wire=detected[0],
        base_url=detected[1],
        status=status,
        body=body,
        content_type=content_type,
        method=method,
        request_body=parsed,
    )


def _cassette_from(f: _Fields, data: Any) -> Cassette:
    if not isinstance(data, dict):
        raise f.error("top level", "must be a mapping with 'interactions'")
    items = f.get(data, "interactions", "", list)
    if not items:
        raise f.error("interactions", "must hold at least one interaction")
    interactions = tuple(
        _interaction(f, node, f"interactions[{i}]") for i, node in enumerate(items)
    )
    return Cassette(f.path, interactions)


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette; malformed files raise `ConfigError` naming file and field."""
    p = Path(path)
    return _cassette_from(_Fields(p), _read_yaml(p))


def _first_prompt(cassette: Cassette) -> str:
    """The first user text of the first recorded request, if it has one."""
    body = cassette.interactions[0].request_body or {}
    messages = body.get("messages") or body.get("input")
    if isinstance(messages, str):
        return messages
    for message in messages or ():
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        for part in content or ():
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


def _workspace(f: _Fields, data: Mapping[str, Any]) -> dict[str, str]:
    workspace = f.get(data, "workspace", "", dict, required=False)
    if workspace is None:
        return {}
    files = f.get(workspace, "files", "workspace", dict, required=False) or {}
    out: dict[str, str] = {}
    for name, content in files.items():
        where = f"workspace.files[{name!r}]"
        if not isinstance(name, str) or not name:
            raise f.error(where, "a file name must be a non-empty string")
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts or "\\" in name:
            raise f.error(where, "must be a relative path inside the workspace")
        if not isinstance(content, str):
            raise f.error(where, "content must be a string")
        out[str(pure)] = content
    return out


def load_scenario(path: str | os.PathLike[str], text: str | None = None) -> Scenario:
    """Read a replay scenario: a cassette plus the workspace it runs in
    (`text`: the file's text when the caller has read it, as for `-`, stdin)."""
    p = Path(path)
    shown = Path("<stdin>") if os.fspath(path) == "-" else p
    f = _Fields(shown)
    data = _read_yaml(p, text, str(shown))
    cassette = _cassette_from(f, data)
    prompt = f.get(data, "prompt", "", str, required=False)
    return Scenario(
        name="stdin" if os.fspath(path) == "-" else p.stem,
        path=p,
        workspace_files=_workspace(f, data),
        cassette=cassette,
        prompt=prompt if prompt is not None else _first_prompt(cassette),
        description=f.get(data, "description", "", str, required=False) or "",
    )


def builtin_scenarios() -> dict[str, Path]:
    """The scenarios shipped in `metis_runtime/scenarios`, by name."""
    return {p.stem: p for p in sorted(SCENARIO_DIR.glob("*.yaml"))}
