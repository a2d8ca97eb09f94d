"""Child authority: what a spawned agent may see and do.

A child's surface is the parent's visible tools, intersected with the profile
and call-site allowlists, minus the union of deny lists. Its gate is a clone of
the parent's and never more permissive (`mode_at_most`).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from metis_trace import Mode

from ._permissions import mode_at_most

# Tools a plan-locked child loses: it may neither spawn nor leave plan mode.
SPAWNING_TOOLS: frozenset[str] = frozenset({"spawn_agent"})
MODE_CHANGING_TOOLS: frozenset[str] = frozenset({"set_mode", "exit_plan_mode"})
PLAN_LOCKED_REMOVED: frozenset[str] = SPAWNING_TOOLS | MODE_CHANGING_TOOLS


@attrs.frozen
class ChildRefusal:
    """A spawn the parent's authority does not cover (a value, not an error)."""

    reason: str


@attrs.frozen
class ChildAuthority:
    mode: Mode
    tools: frozenset[str]


def child_surface(
    parent_visible: Iterable[str],
    profile_allow: Iterable[str] | None = None,
    callsite_allow: Iterable[str] | None = None,
    deny_lists: Iterable[Iterable[str]] = (),
) -> frozenset[str]:
    """parent ∩ profile ∩ call-site, minus ⋃ denies. `None` means no narrowing."""
    surface = frozenset(parent_visible)
    for allow in (profile_allow, callsite_allow):
        if allow is not None:
            surface &= frozenset(allow)
    for deny in deny_lists:
        surface -= frozenset(deny)
    return surface


def child_authority(
    parent_mode: Mode,
    parent_visible: Iterable[str],
    requested_mode: Mode | None = None,
    profile_allow: Iterable[str] | None = None,
    callsite_allow: Iterable[str] | None = None,
    deny_lists: Iterable[Iterable[str]] = (),
) -> ChildAuthority | ChildRefusal:
    """The authority a child gets, or why it cannot be spawned as asked."""
    mode = Mode.PLAN if parent_mode is Mode.PLAN else (requested_mode or parent_mode)
    if not mode_at_most(mode, parent_mode):
        return ChildRefusal(f"a {parent_mode.value} parent cannot start a {mode.value} child")
    tools = child_surface(parent_visible, profile_allow, callsite_allow, deny_lists)
    if mode is Mode.PLAN:
        tools -= PLAN_LOCKED_REMOVED
    return ChildAuthority(mode, tools)


def spawn_violation(
    parent_mode: Mode,
    parent_tools: Iterable[str],
    child_mode: Mode,
    child_tools: Iterable[str],
    requested_mode: Mode | None = None,
) -> tuple[str, str] | None:
    """The first CHILD invariant a recorded spawn breaks, as (ID, reason).

    `requested_mode` (when the trace records it) is the mode the child's gate
    was asked for: under a parent that is not plan, a request more
    permissive than the parent's must have been refused, and an admitted one
    gives exactly that mode (CHILD-2, `child_authority`)."""
    extra = sorted(frozenset(child_tools) - frozenset(parent_tools))
    if extra:
        return "CHILD-1", f"child tools {extra} are not visible to the parent"
    if parent_mode is Mode.PLAN and child_mode is not Mode.PLAN:
        return "CHILD-3", f"a plan parent started a {child_mode.value} child"
    if not mode_at_most(child_mode, parent_mode):
        return (
            "CHILD-2",
            f"{child_mode.value} child is more permissive than {parent_mode.value} parent",
        )
    if requested_mode is not None and parent_mode is not Mode.PLAN:
        if not mode_at_most(requested_mode, parent_mode):
            return (
                "CHILD-2",
                f"a child that asked for {requested_mode.value} was started under a "
                f"{parent_mode.value} parent: the spawn must be refused",
            )
        if child_mode is not requested_mode:
            return (
                "CHILD-2",
                f"the child asked for {requested_mode.value} and runs in {child_mode.value}",
            )
    locked = sorted(frozenset(child_tools) & PLAN_LOCKED_REMOVED)
    if child_mode is Mode.PLAN and locked:
        return "CHILD-3", f"plan-locked child keeps {locked}"
    return None
