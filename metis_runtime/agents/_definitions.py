"""Agent definitions: Markdown files with YAML front matter.

    ---
    name: backend-engineer
    description: Expert in the service's API layer
    model: anthropic/claude-sonnet-4-5     # optional
    thinking: high                         # off minimal low medium high xhigh
    tools: [read, write, edit, bash]       # optional allowlist (a list or "a, b")
    disallowedTools: [spawn_agent]         # optional
    env: {NODE_ENV: test}                  # optional
    ---
    The body is the system prompt.

Found in `.metis/agents/*.md` of the project, then the user folder
(`~/.metis/agents`, or `$METIS_USER_AGENTS`), then the built-ins; the first
definition of a name wins. A bad file is reported (one line: file, field,
problem) and skipped; the others still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from attrs import frozen
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from metis_model.trace import InputError

from .._input import read_input_text
from .._yaml import load_yaml

USER_AGENTS_ENV = "METIS_USER_AGENTS"
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
BUILTIN_ROLES: tuple[str, ...] = ("coordinator", "planner", "implementer", "reviewer", "verifier")

Thinking = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
Origin = Literal["project", "user", "builtin"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)


def _names(value: object) -> object:
    # "read, grep" is accepted as well as a YAML list. A tuple, since strict
    # validation takes a validator's Python output as Python (no list for a tuple).
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return tuple(value) if isinstance(value, list) else value


class AgentDefinition(BaseModel):
    """One validated definition. `tools` None means: whatever the parent gives."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    description: str = Field(min_length=1)
    model: str | None = None
    thinking: Thinking | None = None
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = Field(default=(), alias="disallowedTools")
    env: dict[str, str] = Field(default_factory=dict)
    system_prompt: str = ""
    origin: Origin = "builtin"
    path: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("must be lower-case letters, digits, '-' or '_' (at most 64)")
        return value

    @field_validator("tools", "disallowed_tools", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return _names(value)

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, value: object) -> object:
        # YAML turns `DEBUG: 1` into an int; the environment only holds strings.
        if isinstance(value, Mapping):
            return {
                str(k): ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
                for k, v in value.items()
            }
        return value


@frozen
class DefinitionProblem:
    """A definition that could not be loaded: where, which field, why."""

    path: Path
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"


@frozen
class AgentCatalog:
    """The definitions in force by name, and the files that were skipped."""

    agents: Mapping[str, AgentDefinition]
    problems: tuple[DefinitionProblem, ...] = ()
    shadowed: tuple[AgentDefinition, ...] = ()  # definitions a higher folder overrode

    def get(self, name: str) -> AgentDefinition | None:
        return self.agents.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.agents))


def user_agents_dir() -> Path:
    override = os.environ.get(USER_AGENTS_ENV)
    return Path(override).expanduser() if override else Path.home() / ".metis" / "agents"


def _field_of(err: Mapping[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    if loc and loc[0] == "disallowed_tools":
        loc[0] = "disallowedTools"
    return ".".join(loc) or "front matter"


def _located(exc: InputError) -> str:
    return f"line {exc.line}: {exc.message}" if exc.line else exc.message


def parse_definition(text: str, path: Path, origin: Origin) -> AgentDefinition | DefinitionProblem:
    """One definition from a file's text, or the one-line problem with it."""
    match = _FRONT.match(text)
    if match is None:
        return DefinitionProblem(path, "front matter", "missing: the file must start with '---'")
    try:  # JSON's data model and limits; the front matter starts on line 2
        data = load_yaml(match.group(1), source=str(path), first_line=2)
    except InputError as exc:
        return DefinitionProblem(path, "front matter", _located(exc))
    if not isinstance(data, dict):
        return DefinitionProblem(path, "front matter", "must be a YAML mapping")
    for key in ("system_prompt", "origin", "path"):
        if key in data:
            return DefinitionProblem(path, key, "not a front-matter field")
    body = text[match.end() :].strip()
    fields = {**data, "system_prompt": body, "origin": origin, "path": str(path)}
    try:  # strict: validated as JSON text, so `true` is no string and no integer
        return AgentDefinition.model_validate_json(json.dumps(fields), strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        return DefinitionProblem(path, _field_of(err), " ".join(str(err["msg"]).split()))


def _load_dir(
    directory: Path, origin: Origin, problems: list[DefinitionProblem]
) -> list[AgentDefinition]:
    if not directory.is_dir():
        return []
    found: list[AgentDefinition] = []
    seen: dict[str, Path] = {}
    for path in sorted(directory.glob("*.md")):
        try:
            text = read_input_text(path)  # a regular file, bounded, UTF-8
        except InputError as exc:
            problems.append(DefinitionProblem(path, "file", _located(exc)))
            continue
        got = parse_definition(text, path, origin)
        if isinstance(got, DefinitionProblem):
            problems.append(got)
        elif got.name in seen:
            problems.append(
                DefinitionProblem(path, "name", f"{got.name!r} is also defined in {seen[got.name]}")
            )
        else:
            seen[got.name] = path
            found.append(got)
    return found


def load_agents(
    project: str | os.PathLike[str] | None = None,
    *,
    user_dir: str | os.PathLike[str] | None = None,
    builtin: bool = True,
) -> AgentCatalog:
    """The definitions of `project/.metis/agents`, the user folder and the
    built-ins, in that order of precedence."""
    problems: list[DefinitionProblem] = []
    folders: list[tuple[Path, Origin]] = []
    if project is not None:
        folders.append((Path(project) / ".metis" / "agents", "project"))
    folders.append((Path(user_dir) if user_dir is not None else user_agents_dir(), "user"))
    if builtin:
        folders.append((BUILTIN_DIR, "builtin"))
    agents: dict[str, AgentDefinition] = {}
    shadowed: list[AgentDefinition] = []
    for directory, origin in folders:
        for definition in _load_dir(directory, origin, problems):
            if definition.name in agents:
                shadowed.append(definition)
            else:
                agents[definition.name] = definition
    return AgentCatalog(MappingProxyType(agents), tuple(problems), tuple(shadowed))


def catalog_of(definitions: Iterable[AgentDefinition]) -> AgentCatalog:
    """A catalog of given definitions (first of a name wins), for tests and embedding."""
    agents: dict[str, AgentDefinition] = {}
    for d in definitions:
        agents.setdefault(d.name, d)
    return AgentCatalog(MappingProxyType(agents))
