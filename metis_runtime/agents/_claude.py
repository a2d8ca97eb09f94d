"""Claude Code's subagent vocabulary, mapped onto metis's.

- Fields (https://code.claude.com/docs/en/sub-agents, "Supported frontmatter
  fields"): `name`, `description`, `tools`, `disallowedTools`, `model`,
  `permissionMode`, `maxTurns`, `skills`, `mcpServers`, `hooks`, `memory`,
  `background`, `effort`, `isolation`, `initialPrompt`, `color`.
- Tool names (https://code.claude.com/docs/en/tools-reference; `Task` is the
  older name of `Agent`, `MultiEdit` and `LS` are older tools). `Agent(a, b)`
  restricts which agents may be spawned. Names metis has no tool for are kept
  and reported; they narrow the surface to nothing.
- Model aliases (https://code.claude.com/docs/en/model-config): `sonnet`,
  `opus`, `haiku` (each overridable by `ANTHROPIC_DEFAULT_SONNET_MODEL`,
  `..._OPUS_MODEL`, `..._HAIKU_MODEL`, as in Claude Code), `opusplan` (opus in
  plan mode, else sonnet), `sonnet[1m]`; `inherit` and `default` name the
  parent's model.
- `effort` (low, medium, high, xhigh, max) onto metis's thinking levels
  (`max` is the highest there is: `xhigh`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from types import MappingProxyType

from attrs import frozen

from ._authority import AGENT_TOOL_NAMES

CLAUDE_FIELDS: tuple[str, ...] = (
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "permissionMode",
    "maxTurns",
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "background",
    "effort",
    "isolation",
    "initialPrompt",
    "color",
)
# Documented fields metis keeps and reports but does not act on.
KEPT_FIELDS: tuple[str, ...] = (
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "initialPrompt",
    "color",
)

_SPAWN = ("spawn_agent", "list_agents", "wait_agent")
CLAUDE_TOOLS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "Read": ("read",),
        "Write": ("write",),
        "Edit": ("edit",),
        "MultiEdit": ("edit",),
        "Bash": ("bash",),
        "Glob": ("glob",),
        "Grep": ("grep",),
        "LS": ("ls",),
        "Agent": _SPAWN,
        "Task": _SPAWN,
        "SendMessage": ("message_agent",),
        "TaskOutput": ("wait_agent",),
        "TaskStop": ("kill_agent",),
        "ExitPlanMode": ("exit_plan_mode",),
        # Documented tools with no metis counterpart.
        **{
            name: ()
            for name in (
                "AskUserQuestion",
                "BashOutput",
                "CronCreate",
                "CronDelete",
                "CronList",
                "EnterPlanMode",
                "EnterWorktree",
                "ExitWorktree",
                "KillShell",
                "LSP",
                "ListMcpResourcesTool",
                "Monitor",
                "NotebookEdit",
                "NotebookRead",
                "PowerShell",
                "ReadMcpResourceTool",
                "Skill",
                "SlashCommand",
                "TaskCreate",
                "TaskGet",
                "TaskList",
                "TaskUpdate",
                "TeamCreate",
                "TeamDelete",
                "TodoWrite",
                "ToolSearch",
                "WebFetch",
                "WebSearch",
            )
        },
    }
)
_EDITING = frozenset({"write", "edit"})
_SPEC = re.compile(r"^\s*([A-Za-z0-9_.:*-]+)\s*\((.*)\)\s*$", re.DOTALL)

MODEL_ALIASES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "sonnet": ("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-5"),
        "opus": ("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-4-1"),
        "haiku": ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5"),
    }
)
INHERIT_MODELS = frozenset({"inherit", "default"})

EFFORT_TO_THINKING: Mapping[str, str] = MappingProxyType(
    {"low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
)


def split_tool_list(text: str) -> list[str]:
    """`Read, Agent(a, b), Bash(git diff:*)`: commas inside parentheses stay."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


@frozen
class ToolNames:
    """A `tools` or `disallowedTools` list in metis's terms.

    `tools`: metis tool names; `spawnable`: the agents `Agent(...)` allows (None:
    any); `unmapped`: Claude Code tools metis has none of; `rules`: entries
    with a specifier (`Bash(rm:*)`), as permission rules."""

    tools: tuple[str, ...]
    spawnable: tuple[str, ...] | None = None
    unmapped: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()


def map_tools(names: Iterable[str]) -> ToolNames:
    """Claude Code's tool names (and metis's, which pass unchanged) as metis tools."""
    tools: dict[str, None] = {}
    unmapped: list[str] = []
    rules: list[str] = []
    spawnable: list[str] | None = None
    for raw in names:
        name, spec = raw.strip(), None
        found = _SPEC.match(name)
        if found is not None:
            name, spec = found.group(1), found.group(2).strip()
        mapped = CLAUDE_TOOLS.get(name)
        if mapped is None:
            mapped = (name,)  # a metis name, an MCP tool (mcp__server__tool), a plugin's
        elif not mapped:
            unmapped.append(raw.strip())
        tools.update(dict.fromkeys(mapped))
        if spec is None:
            continue
        if name in ("Agent", "Task"):
            allowed = [a.strip() for a in spec.split(",") if a.strip()]
            spawnable = sorted({*(spawnable or ()), *allowed})
        else:
            rules.append(raw.strip())
    if "spawn_agent" in tools and _EDITING & tools.keys():
        tools["integrate_agent"] = None  # applying a child's work is an edit
    return ToolNames(
        tuple(tools),
        tuple(spawnable) if spawnable is not None else None,
        tuple(unmapped),
        tuple(rules),
    )


def deny_names(names: Iterable[str]) -> ToolNames:
    """A `disallowedTools` list: a bare name removes the tool (`Agent`: every
    agent tool); a specifier (`Bash(rm:*)`) becomes a deny rule instead."""
    tools: dict[str, None] = {}
    rules: list[str] = []
    unmapped: list[str] = []
    for raw in names:
        name = raw.strip()
        if _SPEC.match(name):
            rules.append(name)
            continue
        mapped = CLAUDE_TOOLS.get(name)
        if name in ("Agent", "Task"):
            mapped = AGENT_TOOL_NAMES
        if mapped is None:
            mapped = (name,)
        elif not mapped:
            unmapped.append(name)
        tools.update(dict.fromkeys(mapped))
    return ToolNames(tuple(tools), None, tuple(unmapped), tuple(rules))


def alias_model(alias: str, *, plan: bool = False) -> str | None:
    """The Anthropic model id a Claude Code alias names (None: not an alias)."""
    name = alias.strip()
    if name == "opusplan":
        name = "opus" if plan else "sonnet"
    elif name == "sonnet[1m]":
        name = "sonnet"
    entry = MODEL_ALIASES.get(name)
    if entry is None:
        return None
    variable, default = entry
    return os.environ.get(variable, "").strip() or default
