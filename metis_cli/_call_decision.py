"""One Claude Code tool call decided by metis's gate.

`metis hook claude-code` and `metis permissions check` both decide through
`decide_call`, so the two cannot disagree on a call (the tests run every
hook case through both). No click here: the hook's fast path loads this.

Claude Code's Grep and Glob hide the files a Read deny matches from their
results (https://code.claude.com/docs/en/permissions: a deny "hides matching
files from discovery and search", the Glob/Grep fix of 2.1.162), so a search
rooted above a denied file is not denied whole; one rooted at a denied path,
or at a folder every entry of which is denied, is. A search without a path is
rooted at the working directory. A hook sees the call, not its results: the
hiding itself is Claude Code's (metis's own search tools hide the same files:
`Gate.hides`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from metis_trace import ToolKind

if TYPE_CHECKING:
    from pathlib import Path

    from metis_runtime.permissions import Gate
    from metis_runtime.permissions import GateDecision
    from metis_runtime.permissions import Policy
    from metis_trace import Mode

__all__ = [
    "PATH_KEYS",
    "READ_ONLY_TOOLS",
    "call_gate",
    "call_paths",
    "decide_call",
    "infer_kind",
    "input_paths",
]

_KINDS: dict[str, ToolKind] = {
    "read": ToolKind.READ_ONLY,
    "ls": ToolKind.READ_ONLY,
    "glob": ToolKind.READ_ONLY,
    "grep": ToolKind.READ_ONLY,
    "notebookread": ToolKind.READ_ONLY,
    # WebFetch and WebSearch send data out: not read-only (ask in default,
    # deny in dontAsk; code.claude.com/docs/en/permission-modes).
    "webfetch": ToolKind.EXEC,
    "websearch": ToolKind.EXEC,
    "edit": ToolKind.EDIT,
    "write": ToolKind.EDIT,
    "multiedit": ToolKind.EDIT,
    "notebookedit": ToolKind.EDIT,
    # Agent/Task: spawning does not prompt; the sub-agent's own calls are
    # checked (code.claude.com/docs/en/permissions, "Agent"; the hook sees
    # them, with agent_id). Deny, ask and parameter rules still apply.
    "agent": ToolKind.READ_ONLY,
    "task": ToolKind.READ_ONLY,
    "exitplanmode": ToolKind.PLAN_CONTROL,
    "todowrite": ToolKind.PLAN_CONTROL,
}
# Tools with no effect outside the conversation: a call of one that metis
# cannot decide is left to Claude Code's own rules (no decision).
READ_ONLY_TOOLS = frozenset({"read", "ls", "glob", "grep", "notebookread", "todowrite"})
_SEARCHES = frozenset({"grep", "glob"})
PATH_KEYS = ("file_path", "path", "notebook_path")


def infer_kind(tool: str, tool_input: Mapping[str, Any]) -> ToolKind:
    """The kind of a call as far as the tool and its input tell; unknown tools are exec."""
    lower = tool.lower()
    if lower == "bash":
        from metis_runtime.shell import analyze_command

        command = tool_input.get("command")
        read_only = isinstance(command, str) and analyze_command(command).read_only
        return ToolKind.READ_ONLY if read_only else ToolKind.EXEC
    return _KINDS.get(lower, ToolKind.EXEC)


def input_paths(tool_input: Mapping[str, Any]) -> list[str]:
    paths = [v for k in PATH_KEYS if isinstance(v := tool_input.get(k), str)]
    many = tool_input.get("paths")
    if isinstance(many, list):
        paths.extend(p for p in many if isinstance(p, str))
    return paths


def call_gate(policy: Policy, mode: Mode, cwd: Path, *, auto: bool = False) -> Gate:
    """The gate that decides a call made in `cwd` (headless: Claude Code, not
    metis, asks the user); its `header_meta()` is what the hook trace records
    of the settings (AUTH-4). ConfigError: it cannot be built."""
    from metis_runtime.permissions import Gate
    from metis_trace import Route

    return Gate(policy, mode, cwd, Route.HEADLESS, auto=auto, search_hides_denied=True)


def call_paths(tool: str, tool_input: Mapping[str, Any], cwd: Path) -> list[str]:
    """The paths the gate decides a call on, as its input names them."""
    paths = input_paths(tool_input)
    if tool.lower() in _SEARCHES and not paths:
        paths = [os.fspath(cwd)]  # a search without a path is rooted at the working directory
    return paths


def decide_call(
    policy: Policy,
    mode: Mode,
    cwd: Path,
    tool: str,
    tool_input: Mapping[str, Any],
    *,
    auto: bool = False,
    kind: ToolKind | None = None,
    gate: Gate | None = None,
) -> GateDecision:
    """The gate's decision on one call made in `cwd` (`gate`: one built by
    `call_gate` for the same; headless: Claude Code, not metis, asks the
    user). ConfigError: the gate cannot be built."""
    if gate is None:
        gate = call_gate(policy, mode, cwd, auto=auto)
    paths = call_paths(tool, tool_input, cwd)
    command = tool_input.get("command")
    return gate.decide(
        tool,
        tool_input,
        kind if kind is not None else infer_kind(tool, tool_input),
        paths,
        command if isinstance(command, str) else None,
    )
