"""Trees of agents: the spawn guard and the conformance of a whole trace tree.

The spawn guard (`guard_decision`) is a pure function of a tree-wide state and
one request. It checks, in this order (CHILD-4): depth, total, per-parent,
concurrency, duplicate task; the first failing check is the refusal, as a value
with a code. `check_trace_tree` replays every trace of a tree with
`check_trace` and checks the links between them (CHILD-5), the tree-wide
limits recorded in the headers (CHILD-4), and hook inheritance (CHILD-6).

Header `meta` keys read here (written by the runtime, all optional):
`guard` (`max_depth`, `max_total`, `max_per_parent`), `agent` (the definition
name), `task_hash`, `forced`. The hooks in force are the header's `hooks`:
each trace's replay checks they were enforced; the tree, that a child keeps
every hook of its parent, with the same matcher (CHILD-6).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import attrs

from ._check import check_trace
from ._children import spawn_violation
from ._derive import recorded_permissions
from ._report import Report, Violation
from .trace import RuleBehavior, Spawn, TraceEvent, TraceHeader

__all__ = [
    "GUARD_ORDER",
    "Admit",
    "GuardLimits",
    "GuardState",
    "Refusal",
    "RefusalCode",
    "SpawnRequest",
    "admit",
    "check_trace_tree",
    "dropped_rules",
    "finish",
    "guard_decision",
    "normalize_task",
    "task_hash",
]


class RefusalCode(StrEnum):
    DEPTH_LIMIT = "DEPTH_LIMIT"
    TOTAL_LIMIT = "TOTAL_LIMIT"
    PER_PARENT_LIMIT = "PER_PARENT_LIMIT"
    CONCURRENCY_LIMIT = "CONCURRENCY_LIMIT"
    DUPLICATE_TASK_WARNING = "DUPLICATE_TASK_WARNING"


# The order of the checks is part of the contract (CHILD-4): a request that
# breaks several limits is refused with the first.
GUARD_ORDER: tuple[RefusalCode, ...] = tuple(RefusalCode)


@attrs.frozen
class GuardLimits:
    """Defaults from the agents seed: depth 5, 32 in total, 8 per parent,
    4 running at once, 600 s per child."""

    max_depth: int = 5
    max_total: int = 32
    max_per_parent: int = 8
    max_concurrent: int = 4
    timeout_s: float = 600.0


def normalize_task(text: str) -> str:
    """Trimmed, lower-cased, whitespace collapsed to single spaces."""
    return " ".join(text.lower().split())


def task_hash(text: str) -> str:
    return hashlib.sha256(normalize_task(text).encode("utf-8")).hexdigest()[:16]


@attrs.frozen
class SpawnRequest:
    """`parent_depth` is the spawning agent's depth (0 at the root)."""

    parent_id: str
    parent_depth: int
    agent: str
    task: str
    force: bool = False
    rationale: str = ""

    @property
    def depth(self) -> int:
        return self.parent_depth + 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.agent, task_hash(self.task))

    @property
    def overrides_duplicate(self) -> bool:
        return self.force or bool(self.rationale.strip())


def _frozen_counts(m: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(m))


@attrs.frozen
class GuardState:
    """The tree-wide bookkeeping: spawned so far, per parent, running, tasks."""

    limits: GuardLimits = GuardLimits()
    total: int = 0
    per_parent: Mapping[str, int] = attrs.field(
        factory=lambda: MappingProxyType({}), converter=_frozen_counts
    )
    running: frozenset[str] = frozenset()
    tasks: frozenset[tuple[str, str]] = frozenset()


@attrs.frozen
class Admit:
    depth: int
    task_hash: str


@attrs.frozen
class Refusal:
    """A spawn the guard refuses: a value with a code, never an exception."""

    code: RefusalCode
    message: str


def guard_decision(state: GuardState, request: SpawnRequest) -> Admit | Refusal:
    """Admit the spawn, or refuse it with the first failing check (CHILD-4)."""
    lim = state.limits
    if request.depth > lim.max_depth:
        return Refusal(
            RefusalCode.DEPTH_LIMIT,
            f"depth {request.depth} exceeds the limit of {lim.max_depth}",
        )
    if state.total >= lim.max_total:
        return Refusal(
            RefusalCode.TOTAL_LIMIT, f"{state.total} agents spawned; the limit is {lim.max_total}"
        )
    spawned = state.per_parent.get(request.parent_id, 0)
    if spawned >= lim.max_per_parent:
        return Refusal(
            RefusalCode.PER_PARENT_LIMIT,
            f"{request.parent_id} has spawned {spawned}; the limit is {lim.max_per_parent}",
        )
    if len(state.running) >= lim.max_concurrent:
        return Refusal(
            RefusalCode.CONCURRENCY_LIMIT,
            f"{len(state.running)} agents running; the limit is {lim.max_concurrent}",
        )
    agent, digest = request.key
    if (agent, digest) in state.tasks and not request.overrides_duplicate:
        return Refusal(
            RefusalCode.DUPLICATE_TASK_WARNING,
            f"{agent} was already given this task; pass force or a rationale to spawn it again",
        )
    return Admit(request.depth, digest)


def admit(state: GuardState, request: SpawnRequest, agent_id: str) -> GuardState:
    """The state after an admitted spawn started as `agent_id`."""
    counts = dict(state.per_parent)
    counts[request.parent_id] = counts.get(request.parent_id, 0) + 1
    return attrs.evolve(
        state,
        total=state.total + 1,
        per_parent=counts,
        running=state.running | {agent_id},
        tasks=state.tasks | {request.key},
    )


def finish(state: GuardState, agent_id: str) -> GuardState:
    """The child ended (any way): it stops counting towards concurrency."""
    return attrs.evolve(state, running=state.running - {agent_id})


# --- the tree of traces ---------------------------------------------------------

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
    parent's visible tools (CHILD-5); every spawn has its child's trace; the
    root's guard limits hold over the tree (CHILD-4); a child keeps every hook
    of its parent (CHILD-6). All violations are reported, the per-trace ones
    first (the first of each trace).
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

    Concurrency is not checked: each process has its own monotonic clock, so
    intervals of different traces cannot be compared.
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
