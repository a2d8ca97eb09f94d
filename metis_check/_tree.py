"""The conformance of a whole tree of traces (CHILD-4, CHILD-5, CHILD-6).

`check_trace_tree` replays every trace of a tree with `check_trace` and checks
the links between them (CHILD-5), the tree-wide limits recorded in the headers
(CHILD-4), and hook inheritance (CHILD-6).

Header `meta` keys read here (written by the runtime, all optional):
`guard` (`max_depth`, `max_total`, `max_per_parent`), `agent` (the definition
name), `task_hash`, `forced`. The hooks in force are the header's `hooks`:
each trace's replay checks they were enforced; the tree, that a child keeps
every hook of its parent, with the same matcher (CHILD-6).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs

from metis_model._children import spawn_violation
from metis_model._derive import recorded_permissions
from metis_trace import RuleBehavior
from metis_trace import Spawn
from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._check import check_trace
from ._report import Report
from ._report import Violation
from ._tree_callsite import callsite_violation
from ._tree_concurrency import running_at_once

__all__ = ["Traces", "check_trace_tree", "dropped_rules"]


Traces = Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]]


def _v(inv: str, source: str, message: str, index: int = 0, line: int | None = 1) -> Violation:
    return Violation(invariant=inv, index=index, message=f"{source}: {message}", line=line)


def check_trace_tree(traces: Traces, *, source: str = "<tree>") -> Report:
    """Check every trace of a tree, and the tree.

    `traces` maps a name (a file path) to its header and events. Each trace is
    replayed with `check_trace`; then the links: one root, one `root_run_id`,
    unique agent ids, every child's parent exists and holds exactly one
    `spawn` event for it whose mode and tools are the child's header, depth is
    the parent's plus one, and that spawn obeys CHILD-1..3 against the
    parent's visible tools (CHILD-5); every spawn's child tools keep within
    its call's `tools` and outside its `disallowed_tools` (CHILD-1); every
    spawn has its child's trace; the root's guard limits hold over the tree
    (CHILD-4); a child keeps every hook of its parent (CHILD-6). All
    violations are reported, the per-trace ones first (the first of each
    trace).
    """
    violations: list[Violation] = []
    checks: Counter[str] = Counter()
    transitions: Counter[str] = Counter()
    events = 0
    for name, (header, evs) in traces.items():
        report = check_trace(evs, header, source=name)
        events += report.events
        checks.update(report.checks)
        transitions.update(report.transitions)
        violations.extend(
            attrs.evolve(v, message=f"{name}: {v.message}") for v in report.violations
        )
    violations.extend(_links(traces, checks))
    return Report(
        source=source,
        events=events,
        violations=tuple(violations),
        checks={k: v for k, v in checks.items() if v},
        transitions=dict(transitions),
    )


def _spawns(events: Sequence[TraceEvent]) -> list[Spawn]:
    return [e for e in events if isinstance(e, Spawn)]


def _links(traces: Traces, checks: Counter[str]) -> list[Violation]:
    out: list[Violation] = []
    by_agent: dict[str, str] = {}
    for name, (header, _) in traces.items():
        checks["CHILD-5"] += 1
        if header.agent_id in by_agent:
            out.append(
                _v(
                    "CHILD-5",
                    name,
                    f"agent id {header.agent_id!r} also used by {by_agent[header.agent_id]}",
                )
            )
            continue
        by_agent[header.agent_id] = name
    roots = [n for n, (h, _) in traces.items() if h.parent_id is None]
    if len(roots) != 1:
        out.append(_v("CHILD-5", "<tree>", f"{len(roots)} root traces (no parent_id): {roots}"))
    run_ids = {h.root_run_id for h, _ in traces.values()}
    if len(run_ids) > 1:
        out.append(_v("CHILD-5", "<tree>", f"more than one root_run_id: {sorted(run_ids)}"))
    for name, (header, _) in traces.items():
        if header.parent_id is None:
            if header.depth != 0:
                out.append(_v("CHILD-5", name, f"root has depth {header.depth}, not 0"))
            continue
        out.extend(_child_links(name, header, traces, by_agent, checks))
    for name, (_, evs) in traces.items():
        for sp in _spawns(evs):
            checks["CHILD-1"] += 1
            asked = callsite_violation(evs, sp, sp.parent_tools)
            if asked is not None:
                out.append(_v("CHILD-1", name, asked, sp.seq, None))
            if sp.agent_id not in by_agent:
                out.append(
                    _v("CHILD-5", name, f"spawn of {sp.agent_id} has no child trace", sp.seq, None)
                )
    if len(roots) == 1:
        out.extend(_guard_limits(traces, traces[roots[0]][0], checks))
    return out


def _child_links(
    name: str,
    header: TraceHeader,
    traces: Traces,
    by_agent: Mapping[str, str],
    checks: Counter[str],
) -> list[Violation]:
    parent_name = by_agent.get(header.parent_id or "")
    if parent_name is None:
        return [_v("CHILD-5", name, f"parent {header.parent_id!r} has no trace in the tree")]
    parent, parent_events = traces[parent_name]
    out: list[Violation] = []
    if header.depth != parent.depth + 1:
        out.append(
            _v(
                "CHILD-5",
                name,
                f"depth {header.depth}, parent {parent.agent_id} has {parent.depth}",
            )
        )
    matching = [s for s in _spawns(parent_events) if s.agent_id == header.agent_id]
    if len(matching) != 1:
        out.append(
            _v(
                "CHILD-5",
                name,
                f"{len(matching)} spawn events for {header.agent_id} in {parent_name}",
            )
        )
    else:
        sp = matching[0]
        if sp.child_mode is not header.mode or set(sp.child_tools) != set(header.tools):
            out.append(
                _v(
                    "CHILD-5",
                    name,
                    f"header ({header.mode.value}, {sorted(header.tools)}) differs from the spawn "
                    f"in {parent_name} ({sp.child_mode.value}, {sorted(sp.child_tools)})",
                )
            )
        checks.update({"CHILD-1": 1, "CHILD-2": 1, "CHILD-3": 1})
        broken = spawn_violation(sp.parent_mode, parent.tools, header.mode, header.tools)
        if broken is not None:
            out.append(_v(broken[0], name, f"against its parent {parent.agent_id}: {broken[1]}"))
        dropped = dropped_rules(parent, header)
        if dropped:
            out.append(
                _v(
                    "CHILD-2",
                    name,
                    f"its gate lacks {len(dropped)} deny/ask rule(s) of its parent "
                    f"{parent.agent_id}'s: {dropped[0]}",
                )
            )
    checks["CHILD-6"] += 1
    missing = sorted(f"{h.id} ({h.matcher})" for h in set(parent.hooks) - set(header.hooks))
    if missing:
        out.append(
            _v("CHILD-6", name, f"parent {parent.agent_id}'s hooks {missing} are not in force")
        )
    return out


def dropped_rules(parent: TraceHeader, child: TraceHeader) -> list[str]:
    """CHILD-2 for the gates the two headers record (`meta.permissions`):
    the parent's deny and ask rules the child's gate does not hold (by
    behaviour, source and text; a child re-anchors `/x` rules at its own
    workspace and numbers its rules afresh). Empty when either header has no
    record (an older trace)."""
    mine, theirs = recorded_permissions(child), recorded_permissions(parent)
    if mine is None or theirs is None:
        return []
    held = {(r.ref.behavior, r.ref.source, r.ref.pattern) for r in mine.rules}
    return [
        f"{r.ref.behavior.value} {r.ref.pattern} ({r.ref.source.value})"
        for r in theirs.rules
        if r.ref.behavior is not RuleBehavior.ALLOW
        and (r.ref.behavior, r.ref.source, r.ref.pattern) not in held
    ]


def _limit(guard: Mapping[str, Any], key: str) -> int | None:
    value = guard.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _guard_limits(traces: Traces, root: TraceHeader, checks: Counter[str]) -> list[Violation]:
    """The limits of the root's guard, as far as traces can show them.

    Concurrency is checked where the traces' clocks compare (one boot's
    CLOCK_MONOTONIC, `meta.clock`): `_tree_concurrency`.
    """
    guard = root.meta.get("guard")
    if not isinstance(guard, Mapping):
        return []
    out: list[Violation] = []
    checks["CHILD-4"] += 1
    max_depth, max_total = _limit(guard, "max_depth"), _limit(guard, "max_total")
    max_per_parent = _limit(guard, "max_per_parent")
    children = [(n, h) for n, (h, _) in traces.items() if h.parent_id is not None]
    for name, h in children:
        if max_depth is not None and h.depth > max_depth:
            out.append(_v("CHILD-4", name, f"depth {h.depth} exceeds the guard's {max_depth}"))
    if max_total is not None and len(children) > max_total:
        out.append(_v("CHILD-4", "<tree>", f"{len(children)} agents, the guard allows {max_total}"))
    for name, (_, evs) in traces.items():
        n = len(_spawns(evs))
        if max_per_parent is not None and n > max_per_parent:
            out.append(_v("CHILD-4", name, f"{n} spawns, the guard allows {max_per_parent}"))
    max_concurrent = _limit(guard, "max_concurrent")
    for admitted, running in running_at_once(traces, root):
        if max_concurrent is not None and len(running) > max_concurrent:
            out.append(
                _v(
                    "CHILD-4",
                    "<tree>",
                    f"{len(running)} agents running at once when {admitted} was admitted"
                    f" ({', '.join(running)}), the guard allows {max_concurrent}",
                )
            )
    # Order-free: of the children given one task, at most one came without force.
    unforced: dict[tuple[str, str], str] = {}
    for name, h in children:
        agent, digest = h.meta.get("agent"), h.meta.get("task_hash")
        if not isinstance(agent, str) or not isinstance(digest, str) or h.meta.get("forced"):
            continue
        first = unforced.setdefault((agent, digest), name)
        if first != name:
            out.append(
                _v("CHILD-4", name, f"same task for {agent} as {first}, admitted without force")
            )
    return out
