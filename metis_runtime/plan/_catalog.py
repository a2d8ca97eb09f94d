"""The catalog of executors: the registry's tools plus manifest executors.

One registry: the agent loop's `ToolRegistry` (built-ins and plugins) gets
every verified manifest executor added as a `ManifestTool`, and the catalog
describes each tool as an executor (`ExecutorInfo`: effect, family, host,
what it produces and consumes, its schema and digest). A plan step runs as a
call of that registry, through the same gate and four-class dispatcher.

Built-in tools are described here (`BUILTIN`); their digest covers their
name, description, schema and implementing class, so an upgrade that changes
a tool changes the executor signature of plans that use it. A plugin tool
without a description here is offered as an `exec` executor of its own family.

For a plan step a tool's text output becomes a value (`StepTool`): JSON as it
is (manifest executors), lines as a collection (`glob`, `grep`, `ls`), or an
object (`read`: path and content; `write` / `edit`: the path). A failure
becomes a `StepError` naming its class, so the driver can tell a structural
failure (recovered at most once, before any commit) from an operational one
(never recovered).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_trace import ExecutorInfo
from metis_trace import ToolKind
from metis_trace import canonical_digest

from .._errors import ToolError
from .._errors import ToolInputError
from ..tools import Classification
from ..tools import Tool
from ..tools import ToolContext
from ..tools import ToolInput
from ..tools import ToolOutput
from ..tools import ToolRegistry
from ..tools import ToolSpec
from ._manifest import Manifest
from ._manifest import ManifestTool
from ._manifest import StepError


@attrs.frozen
class Builtin:
    effect: ToolKind
    family: str
    produces: str
    paths: tuple[str, ...] = ()
    destination: str | None = None


BUILTIN: Mapping[str, Builtin] = {
    "read": Builtin(ToolKind.READ_ONLY, "files.read", "object", ("path",)),
    "ls": Builtin(ToolKind.READ_ONLY, "files.list", "collection", ("path",)),
    "glob": Builtin(ToolKind.READ_ONLY, "files.list", "collection"),
    "grep": Builtin(ToolKind.READ_ONLY, "files.search", "collection"),
    "write": Builtin(ToolKind.EDIT, "files.write", "object", ("path",), "path"),
    "edit": Builtin(ToolKind.EDIT, "files.write", "object", ("path",), "path"),
    "bash": Builtin(ToolKind.EXEC, "shell", "object"),
    "restore_files": Builtin(ToolKind.EDIT, "files.undo", "object", (), "turn"),
}
_EMPTY = ("[no matches]", "[empty directory]")
_MISSING = ("not found", "no such file", "does not exist")


def builtin_digest(tool: Tool) -> str:
    spec = tool.spec
    kind = type(tool)
    return canonical_digest(
        {
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
            "implementation": f"{kind.__module__}.{kind.__qualname__}",
        }
    )


def describe(tool: Tool) -> ExecutorInfo:
    """A registry tool as an executor."""
    if isinstance(tool, ManifestTool):
        return tool.manifest.info
    b = BUILTIN.get(tool.name, Builtin(ToolKind.EXEC, f"plugin.{tool.name}", "object"))
    props = tool.spec.input_schema.get("properties", {})
    return ExecutorInfo(
        name=tool.name,
        digest=builtin_digest(tool),
        effect=b.effect,
        family=b.family,
        produces=b.produces,
        args_schema=tool.spec.input_schema,
        paths=tuple(p for p in b.paths if p in props),
        destination=b.destination,
    )


class Catalog:
    """Executors by name, over one shared registry."""

    def __init__(self, registry: ToolRegistry, problems: Iterable[str] = ()) -> None:
        self.registry = registry
        self.problems = tuple(problems)
        self.infos: dict[str, ExecutorInfo] = {t.name: describe(t) for t in registry}

    @classmethod
    def build(
        cls, registry: ToolRegistry, manifests: Iterable[Manifest], problems: Iterable[str] = ()
    ) -> Catalog:
        """`registry` with the manifest executors added (a name already taken is refused)."""
        tools = list(registry)
        taken = {t.name for t in tools}
        refused = list(problems)
        for m in manifests:
            if m.info.name in taken:
                refused.append(f"{m.path}: name: {m.info.name!r} is already a tool; refused")
                continue
            taken.add(m.info.name)
            tools.append(ManifestTool(m))
        return cls(ToolRegistry(tools, registry.plugin_errors), refused)

    def __contains__(self, name: object) -> bool:
        return name in self.infos

    def info(self, name: str) -> ExecutorInfo:
        return self.infos[name]

    def executors(self) -> tuple[ExecutorInfo, ...]:
        return tuple(self.infos.values())

    def step_registry(self) -> ToolRegistry:
        """The same tools, each wrapped to give a plan step a value (`StepTool`)."""
        return ToolRegistry(StepTool(t, self.infos[t.name]) for t in self.registry)


def _lines(text: str) -> list[str]:
    stripped = text.strip()
    if not stripped or stripped in _EMPTY:
        return []
    return [line for line in stripped.split("\n") if line]


def shape_output(info: ExecutorInfo, tool: Tool, input: ToolInput, text: str) -> Any:
    """A tool's text output as the value a plan step produced."""
    if isinstance(tool, ManifestTool):
        return json.loads(text) if text else None
    if info.produces == "collection":
        return _lines(text)
    if tool.name == "read":
        return {"path": input.get("path"), "content": text}
    if tool.name in ("write", "edit"):
        return {"path": input.get("path"), "message": text}
    return {"output": text}


def classify_failure(exc: Exception) -> StepError:
    if isinstance(exc, StepError):
        return exc
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, ToolInputError):
        return StepError("wrong_args", "arguments", text)
    low = text.lower()
    if isinstance(exc, ToolError) and any(m in low for m in _MISSING):
        return StepError("missing_input", "not_found", text)
    return StepError("operational", "unavailable", text)


class StepTool(Tool):
    """A registry tool run as a plan step: the same spec, kind and class; its
    output becomes JSON (`shape_output`) and its failures name their class."""

    def __init__(self, tool: Tool, info: ExecutorInfo) -> None:
        self.tool = tool
        self.info = info
        self.out_of_process = tool.out_of_process  # type: ignore[misc]

    @property
    def spec(self) -> ToolSpec:
        return self.tool.spec

    def validate(self, input: ToolInput) -> None:
        self.tool.validate(input)

    def kind(self, input: ToolInput) -> ToolKind:
        return self.tool.kind(input)

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return self.tool.classify(input, ctx)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        try:
            out = await self.tool.run(input, ctx)
        except Exception as exc:  # a failing step is a classified error result
            raise classify_failure(exc) from exc
        if out.is_error:
            return ToolOutput(f"[operational/failed] {out.content}", is_error=True)
        value = shape_output(self.info, self.tool, input, out.content)
        return ToolOutput(json.dumps(value, ensure_ascii=False, sort_keys=True))


def read_error(content: str) -> tuple[str, str]:
    """(class, message) of a failed step's result text: `[class/reason] message`."""
    text = content.removeprefix("error: ")
    if text.startswith("[") and "]" in text:
        tag, _, rest = text[1:].partition("]")
        cls = tag.split("/", 1)[0]
        if cls in ("wrong_tool", "wrong_args", "missing_input", "out_of_scope", "operational"):
            return cls, rest.strip()
    return "operational", text


def catalog_for(workspace: Path, registry: ToolRegistry) -> Catalog:
    """The workspace's catalog: the registry plus `.metis/executors/` manifests."""
    from ._manifest import EXECUTORS_DIR
    from ._manifest import load_manifests

    manifests, problems = load_manifests(workspace / EXECUTORS_DIR)
    return Catalog.build(registry, manifests, problems)
