"""What a child may see and do: its tool surface and its permission mode.

The runtime's own reading of specs/children.md (CHILD-1..3); the model's
`_children.py` is the reference it is tested against. The gate itself is
cloned with `permissions.Gate.clone_for_child` (never more permissive);
`child_mode` is the same rule for gates that are not the production one.
"""

from __future__ import annotations

from collections.abc import Iterable

from metis_trace import Mode

from ..permissions import MODES_BELOW
from ..permissions import Refusal

AGENT_TOOL_NAMES: tuple[str, ...] = (
    "spawn_agent",
    "list_agents",
    "wait_agent",
    "kill_agent",
    "message_agent",
    "integrate_agent",
)
SPAWNING_TOOLS: frozenset[str] = frozenset({"spawn_agent"})
MODE_CHANGING_TOOLS: frozenset[str] = frozenset({"set_mode", "exit_plan_mode"})
PLAN_LOCKED_REMOVED: frozenset[str] = SPAWNING_TOOLS | MODE_CHANGING_TOOLS


def child_surface(
    parent_visible: Iterable[str],
    profile_allow: Iterable[str] | None = None,
    callsite_allow: Iterable[str] | None = None,
    deny_lists: Iterable[Iterable[str]] = (),
    *,
    mode: Mode | None = None,
) -> frozenset[str]:
    """parent ∩ profile allowlist ∩ call-site allowlist − ⋃ deny lists; a plan
    child also loses the spawning and mode-changing tools. None: no narrowing."""
    surface = frozenset(parent_visible)
    for allow in (profile_allow, callsite_allow):
        if allow is not None:
            surface &= frozenset(allow)
    for deny in deny_lists:
        surface -= frozenset(deny)
    if mode is Mode.PLAN:
        surface -= PLAN_LOCKED_REMOVED
    return surface


def child_mode(parent: Mode, requested: Mode | None) -> Mode | Refusal:
    """A plan parent forces plan; otherwise the requested mode (default: the
    parent's) must be no more permissive than the parent's."""
    if parent is Mode.PLAN:
        return Mode.PLAN
    mode = requested if requested is not None else parent
    if mode not in MODES_BELOW[parent]:
        return Refusal(f"a {parent.value} parent cannot start a {mode.value} child", parent, mode)
    return mode
