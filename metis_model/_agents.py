"""Trees of agents: the spawn guard.

The spawn guard (`guard_decision`) is a pure function of a tree-wide state and
one request. It checks, in this order (CHILD-4): depth, total, per-parent,
concurrency, duplicate task; the first failing check is the refusal, as a value
with a code. A whole tree of traces is checked by `metis_check.check_trace_tree`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

import attrs

__all__ = [
    "GUARD_ORDER",
    "Admit",
    "GuardLimits",
    "GuardState",
    "Refusal",
    "RefusalCode",
    "SpawnRequest",
    "admit",
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
