"""Agent definitions: Markdown files with YAML front matter, metis's and Claude Code's.

    ---
    name: backend-engineer
    description: Expert in the service's API layer
    model: anthropic/claude-sonnet-4-5     # optional; Claude Code: sonnet, opus, haiku, inherit
    thinking: high                         # off minimal low medium high xhigh
    tools: [read, write, edit, bash]       # optional allowlist (a list or "a, b"); Claude
                                           # Code's names (Read, Bash, Agent(x, y)) map
    disallowedTools: [spawn_agent]         # optional
    env: {NODE_ENV: test}                  # optional
    worktree: auto                         # optional: inherit branch temp auto branch:<name>
    permissionMode: plan                   # optional, never more than the parent's
    ---
    The body is the system prompt.

Every field Claude Code documents for subagents is accepted (see `_claude`):
`permissionMode`, `maxTurns`, `effort`, `isolation` and `background` are
used; `skills`, `mcpServers`, `hooks`, `memory`, `initialPrompt`, `color` are
kept and reported (`metis agents list`). An undocumented field is kept too,
with a warning naming the file and line. A value that is not valid YAML
only because of an unquoted `: ` (as in `description: Triggers on: 'x'`) is
read as the string it was meant to be, as Claude Code's loader does, with
a warning (anthropics/claude-code#16916, #80890).

Folders, highest precedence first (the first definition of a name wins):
1. `<project>/.metis/agents/*.md`
2. `<project>/.claude/agents/**/*.md` (Claude Code's project agents; subfolders read)
3. the user folder: `$METIS_USER_AGENTS`, else `~/.metis/agents/*.md`
4. Claude Code's user agents: `$CLAUDE_CONFIG_DIR/agents`, else `~/.claude/agents/**/*.md`
5. the five built-ins.
Project before user, as in both agents.md and Claude Code; at each level
metis's own folder before Claude Code's. A bad file is reported (one line:
file, line, field, problem) and skipped; the others still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any
from typing import Literal

from attrs import frozen
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import field_validator

from metis_trace import InputError
from metis_trace import Mode

from .._errors import ConfigError
from .._input import read_input_text
from .._yaml import load_yaml
from ..permissions import parse_mode
from ..providers import Thinking
from ._claude import CLAUDE_FIELDS
from ._claude import EFFORT_TO_THINKING
from ._claude import KEPT_FIELDS
from ._claude import split_tool_list
from ._placement import parse_worktree

USER_AGENTS_ENV = "METIS_USER_AGENTS"
CLAUDE_CONFIG_ENV = "CLAUDE_CONFIG_DIR"
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
BUILTIN_ROLES: tuple[str, ...] = ("coordinator", "planner", "implementer", "reviewer", "verifier")

Origin = Literal["project", "user", "builtin"]
Dialect = Literal["metis", "claude-code"]
Effort = Literal["low", "medium", "high", "xhigh", "max"]

# Lower-case letters, digits, '-', '_' and '.' (Claude Code files use `powershell-5.1-expert`).
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]|\.(?!\.)){0,63}$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)")
_INTERNAL = ("system_prompt", "origin", "path", "dialect", "unknown_fields")
_METIS_FIELDS = ("thinking", "env", "worktree")


def _names(value: object) -> object:
    # "Read, Agent(a, b)" is accepted as well as a YAML list. A tuple, since strict
    # validation takes a validator's Python output as Python (no list for a tuple).
    if isinstance(value, str):
        return tuple(split_tool_list(value))
    return tuple(value) if isinstance(value, list) else value


class AgentDefinition(BaseModel):
    """One validated definition. `tools` None means: whatever the parent gives."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    description: str = Field(min_length=1)
    model: str | None = None
    thinking: Thinking | None = None
    effort: Effort | None = None
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = Field(default=(), alias="disallowedTools")
    env: dict[str, str] = Field(default_factory=dict)
    permission_mode: str | None = Field(default=None, alias="permissionMode")
    max_turns: int | None = Field(default=None, alias="maxTurns", ge=1)
    background: bool | None = None
    isolation: Literal["worktree"] | None = None
    worktree: str | None = None
    # Documented by Claude Code, kept and reported, not acted on.
    skills: Any = None
    mcp_servers: Any = Field(default=None, alias="mcpServers")
    hooks: Any = None
    memory: Any = None
    initial_prompt: Any = Field(default=None, alias="initialPrompt")
    color: Any = None
    # Undocumented fields, kept as written (each was a warning).
    unknown_fields: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str = ""
    origin: Origin = "builtin"
    dialect: Dialect = "metis"
    path: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("must be lower-case letters, digits, '-', '_' or '.' (at most 64)")
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

    @field_validator("permission_mode")
    @classmethod
    def _known_mode(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_mode(value, "permissionMode")
            except ConfigError as exc:  # one line naming the choices
                raise ValueError(str(exc).split(": ", 1)[-1]) from None
        return value

    @field_validator("worktree")
    @classmethod
    def _known_worktree(cls, value: str | None) -> str | None:
        if value is not None:
            parse_worktree(value)  # ValueError: one line naming the choices
        return value

    # --- what the fields mean for metis -----------------------------------------

    @property
    def mode(self) -> Mode | None:
        """The mode `permissionMode` names (`auto` is acceptEdits, `manual` default)."""
        return (
            parse_mode(self.permission_mode, "permissionMode")[0] if self.permission_mode else None
        )

    @property
    def thinking_level(self) -> str | None:
        """`thinking`, else Claude Code's `effort` on metis's scale."""
        if self.thinking is not None:
            return self.thinking
        return EFFORT_TO_THINKING[self.effort] if self.effort is not None else None

    @property
    def workspace(self) -> str | None:
        """`worktree`, else Claude Code's `isolation: worktree` (a `branch` workspace)."""
        if self.worktree is not None:
            return self.worktree
        return "branch" if self.isolation == "worktree" else None

    def kept(self) -> dict[str, Any]:
        """Fields given that metis keeps and reports but does not act on."""
        out: dict[str, Any] = {}
        for name in KEPT_FIELDS:
            attr = _ATTRS.get(name, name)
            if attr in self.model_fields_set:
                out[name] = getattr(self, attr)
        out.update(self.unknown_fields)
        return out


_ATTRS = {
    info.alias: name
    for name, info in AgentDefinition.model_fields.items()
    if info.alias is not None
}
_KNOWN_KEYS = frozenset({*CLAUDE_FIELDS, *_METIS_FIELDS, *_ATTRS.values()}) - set(_INTERNAL)


@frozen
class DefinitionProblem:
    """A definition that could not be loaded, or a warning about one that was:
    where (file, line if known), which field, why."""

    path: Path
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}: line {self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.field}: {self.message}"


@frozen
class AgentCatalog:
    """The definitions in force by name, the files that were skipped, the
    definitions a higher folder overrode, and warnings about loaded files."""

    agents: Mapping[str, AgentDefinition]
    problems: tuple[DefinitionProblem, ...] = ()
    shadowed: tuple[AgentDefinition, ...] = ()
    warnings: tuple[DefinitionProblem, ...] = ()

    def get(self, name: str) -> AgentDefinition | None:
        return self.agents.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.agents))

    def restricted(self, names: Iterable[str] | None) -> AgentCatalog:
        """Only these agents (Claude Code's `Agent(a, b)`); None: all of them."""
        if names is None:
            return self
        keep = set(names)
        agents = {n: d for n, d in self.agents.items() if n in keep}
        return AgentCatalog(MappingProxyType(agents), self.problems, self.shadowed, self.warnings)


def user_agents_dir() -> Path:
    override = os.environ.get(USER_AGENTS_ENV)
    return Path(override).expanduser() if override else Path.home() / ".metis" / "agents"


def claude_user_agents_dir() -> Path:
    """Claude Code's user agents: `$CLAUDE_CONFIG_DIR/agents`, else `~/.claude/agents`."""
    override = os.environ.get(CLAUDE_CONFIG_ENV)
    base = Path(override).expanduser() if override else Path.home() / ".claude"
    return base / "agents"


def _key_lines(front: str, first_line: int) -> dict[str, int]:
    """The line of each top-level key of a block-mapping front matter."""
    lines: dict[str, int] = {}
    for i, text in enumerate(front.splitlines()):
        found = _TOP_KEY.match(text)
        if found is not None:
            lines.setdefault(found.group(1), first_line + i)
    return lines


def _quote_plain(front: str) -> tuple[str, list[int]]:
    """Front matter with single-line plain values holding `: ` or ` #` quoted,
    and the (0-based) lines it changed. Values that start a YAML construct,
    and values continued on indented lines, are left alone."""
    lines = front.splitlines()
    changed: list[int] = []
    for i, text in enumerate(lines):
        found = _TOP_KEY.match(text)
        if found is None:
            continue
        value = text[found.end() :].strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            not value
            or value[0] in "'\"|>[{&*!%@`#-"
            or (": " not in value and " #" not in value and not value.endswith(":"))
            or nxt[:1] in (" ", "\t")
        ):
            continue
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        lines[i] = f'{found.group(1)}: "{escaped}"'
        changed.append(i)
    return "\n".join(lines), changed


def _front_matter(
    front: str, path: Path
) -> tuple[Any, list[DefinitionProblem]] | DefinitionProblem:
    """The front matter's data (strict YAML, else Claude Code's lenient reading)."""
    try:
        return load_yaml(front, source=str(path), first_line=2), []
    except InputError as strict:
        quoted, changed = _quote_plain(front)
        if changed:
            try:
                data = load_yaml(quoted, source=str(path), first_line=2)
            except InputError:
                pass
            else:
                keys = {n: k for k, n in _key_lines(front, 2).items()}
                notes = []
                for i in changed:
                    key = keys.get(i + 2, "front matter")
                    notes.append(
                        DefinitionProblem(
                            path,
                            key,
                            "not valid YAML (an unquoted ': ' or ' #'); read as one string, "
                            "as Claude Code does: quote the value",
                            i + 2,
                        )
                    )
                return data, notes
        return DefinitionProblem(path, "front matter", strict.message, strict.line)


def parse_definition(
    text: str, path: Path, origin: Origin, dialect: Dialect = "metis"
) -> tuple[AgentDefinition, tuple[DefinitionProblem, ...]] | DefinitionProblem:
    """One definition and the warnings about it, or the one problem that stops it."""
    match = _FRONT.match(text)
    if match is None:
        return DefinitionProblem(path, "front matter", "missing: the file must start with '---'")
    got = _front_matter(match.group(1), path)
    if isinstance(got, DefinitionProblem):
        return got
    data, warnings = got
    if not isinstance(data, dict):
        return DefinitionProblem(path, "front matter", "must be a YAML mapping")
    lines = _key_lines(match.group(1), 2)
    for key in _INTERNAL:
        if key in data:
            return DefinitionProblem(path, key, "not a front-matter field", lines.get(key))
    known = {k: v for k, v in data.items() if k in _KNOWN_KEYS}
    unknown = {str(k): v for k, v in data.items() if k not in _KNOWN_KEYS}
    for key in unknown:
        warnings.append(
            DefinitionProblem(
                path, key, "unknown field (kept, not used; see `metis agents list`)", lines.get(key)
            )
        )
    body = text[match.end() :].strip()
    fields = {
        **known,
        "unknown_fields": unknown,
        "system_prompt": body,
        "origin": origin,
        "dialect": dialect,
        "path": str(path),
    }
    try:  # strict: validated as JSON text, so `true` is no string and no integer
        definition = AgentDefinition.model_validate_json(json.dumps(fields), strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ())]
        if loc:
            loc[0] = next((a for a, n in _ATTRS.items() if n == loc[0]), loc[0])
        field = ".".join(loc) or "front matter"
        # A validator's ValueError reads "Value error, <ours>": ours alone.
        message = " ".join(str(err["msg"]).split()).removeprefix("Value error, ")
        return DefinitionProblem(path, field, message, lines.get(loc[0]) if loc else None)
    return definition, tuple(warnings)


@frozen
class AgentFolder:
    """A folder of definitions: where, at which level, whose format, how deep."""

    path: Path
    origin: Origin
    dialect: Dialect = "metis"
    recursive: bool = False


def agent_folders(
    project: str | os.PathLike[str] | None,
    *,
    user_dir: str | os.PathLike[str] | None = None,
    claude_user_dir: str | os.PathLike[str] | None = None,
    builtin: bool = True,
) -> list[AgentFolder]:
    """The folders `load_agents` reads, highest precedence first."""
    folders: list[AgentFolder] = []
    if project is not None:
        root = Path(project)
        folders.append(AgentFolder(root / ".metis" / "agents", "project"))
        folders.append(AgentFolder(root / ".claude" / "agents", "project", "claude-code", True))
    folders.append(
        AgentFolder(Path(user_dir) if user_dir is not None else user_agents_dir(), "user")
    )
    claude_user = Path(claude_user_dir) if claude_user_dir is not None else claude_user_agents_dir()
    folders.append(AgentFolder(claude_user, "user", "claude-code", True))
    if builtin:
        folders.append(AgentFolder(BUILTIN_DIR, "builtin"))
    return folders


def _load_dir(
    folder: AgentFolder, problems: list[DefinitionProblem], warnings: list[DefinitionProblem]
) -> list[AgentDefinition]:
    directory = folder.path
    if not directory.is_dir():
        return []
    found: list[AgentDefinition] = []
    seen: dict[str, Path] = {}
    paths = directory.rglob("*.md") if folder.recursive else directory.glob("*.md")
    # Folders named *.md are passed over; anything else is read, so that a FIFO
    # or a device is reported (read_input_text refuses it), not skipped.
    for path in sorted(p for p in paths if not p.is_dir()):
        try:
            text = read_input_text(path)  # a regular file, bounded, UTF-8
        except InputError as exc:
            problems.append(DefinitionProblem(path, "file", exc.message, exc.line))
            continue
        got = parse_definition(text, path, folder.origin, folder.dialect)
        if isinstance(got, DefinitionProblem):
            problems.append(got)
            continue
        definition, notes = got
        if definition.name in seen:
            problems.append(
                DefinitionProblem(
                    path, "name", f"{definition.name!r} is also defined in {seen[definition.name]}"
                )
            )
            continue
        seen[definition.name] = path
        warnings.extend(notes)
        found.append(definition)
    return found


def load_agents(
    project: str | os.PathLike[str] | None = None,
    *,
    user_dir: str | os.PathLike[str] | None = None,
    claude_user_dir: str | os.PathLike[str] | None = None,
    builtin: bool = True,
) -> AgentCatalog:
    """The definitions of every folder of `agent_folders`, in precedence order."""
    problems: list[DefinitionProblem] = []
    warnings: list[DefinitionProblem] = []
    agents: dict[str, AgentDefinition] = {}
    shadowed: list[AgentDefinition] = []
    folders = agent_folders(
        project, user_dir=user_dir, claude_user_dir=claude_user_dir, builtin=builtin
    )
    for folder in folders:
        for definition in _load_dir(folder, problems, warnings):
            if definition.name in agents:
                shadowed.append(definition)
            else:
                agents[definition.name] = definition
    return AgentCatalog(MappingProxyType(agents), tuple(problems), tuple(shadowed), tuple(warnings))


def catalog_of(definitions: Iterable[AgentDefinition]) -> AgentCatalog:
    """A catalog of given definitions (first of a name wins), for tests and embedding."""
    agents: dict[str, AgentDefinition] = {}
    for d in definitions:
        agents.setdefault(d.name, d)
    return AgentCatalog(MappingProxyType(agents))
