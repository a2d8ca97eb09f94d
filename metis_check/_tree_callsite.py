"""A spawn against the call that asked for it (CHILD-1).

A recorded `spawn` event states the child's tools; the trace also holds the
`spawn_agent` call that asked for it, with its `tools` (an allowlist: the
child gets at most those) and `disallowed_tools` (the child gets none of
those). The spawn follows from its call's `effect_start` in the causal
graph. The check is one-sided: a list holding a name that is not a plain
tool name of the parent's surface (a Claude Code name such as `Read`, a rule
with a specifier) is mapped by the runtime in ways this file does not
repeat, so that list says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from metis_trace import Assistant
from metis_trace import Spawn
from metis_trace import TraceEvent

__all__ = ["callsite_violation"]


def _call_input(events: Sequence[TraceEvent], spawn: Spawn) -> Mapping[str, Any] | None:
    by_seq = {e.seq: e for e in events}
    inputs = {
        c.occ: c.input
        for e in events
        if isinstance(e, Assistant)
        for c in e.calls
        if c.tool == "spawn_agent"
    }
    todo, seen = list(spawn.causes), set()
    while todo:
        seq = todo.pop()
        if seq in seen or seq not in by_seq:
            continue
        seen.add(seq)
        e = by_seq[seq]
        occ = getattr(e, "occ", None)
        if isinstance(occ, str) and occ in inputs:
            return inputs[occ]
        todo.extend(e.causes)
    return None


def _plain(names: object, surface: frozenset[str]) -> frozenset[str] | None:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return frozenset(names) if set(names) <= surface else None


def callsite_violation(
    events: Sequence[TraceEvent], spawn: Spawn, parent_tools: Iterable[str]
) -> str | None:
    """Why `spawn`'s child tools break its call's `tools` / `disallowed_tools`."""
    given = _call_input(events, spawn)
    if given is None:
        return None
    surface, child = frozenset(parent_tools), frozenset(spawn.child_tools)
    allow = _plain(given.get("tools"), surface) if "tools" in given else None
    if allow is not None and not child <= allow:
        return (
            f"spawn of {spawn.agent_id}: child tools {sorted(child - allow)} are outside"
            f" its call's tools {sorted(allow)}"
        )
    deny = _plain(given.get("disallowed_tools"), surface) if "disallowed_tools" in given else None
    if deny is not None and child & deny:
        return (
            f"spawn of {spawn.agent_id}: child tools {sorted(child & deny)} are in"
            " its call's disallowed_tools"
        )
    return None
