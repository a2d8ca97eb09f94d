"""The loop system's configuration: its abstraction bounds, the protocol
ablations (each weakens one guard) and their validation.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from metis_trace import MetisModelError

__all__ = [
    "ABLATIONS",
    "QUEUE_KEYS",
    "REGIONS",
    "LoopConfig",
    "UnknownAblation",
    "ablation_names",
    "check_ablations",
]


class UnknownAblation(MetisModelError, ValueError):
    """An ablation name that the encoding does not define."""


# Each ablation weakens one guard of the protocol; the value is the invariant
# `check_trace` reports first on the shortest trace that the weakening allows.
ABLATIONS: Mapping[str, str] = MappingProxyType(
    {
        "no-preflight": "AUTH-2",
        "gate-skips-safe": "AUTH-1",
        "no-closure-repair": "CLOSE-5",
        "exclusive-as-safe": "SCHED-1",
        "child-gate-not-cloned": "CHILD-2",
        "retry-after-commit": "RETRY-1",
        "queue-not-fifo": "SCHED-2",
        "queue-edit-unkeyed": "SCHED-2",
        "footprint-blind": "SCHED-6",
        "stub-started-as-interrupted": "RETRY-3",
        "hooks-not-run": "CHILD-6",
    }
)

REGIONS = 2  # abstract footprint areas: rd<i>_<r>, wr<i>_<r>
QUEUE_KEYS = 2  # a Queue call's key is a Bool: two keys per batch


@attrs.frozen
class LoopConfig:
    slots: int = 3
    jobs: int = 2
    rule_slots: int = 2
    ablations: frozenset[str] = frozenset()
    protocol: bool = True
    # Unboundedly many calls, jobs, queue keys and regions: per-call fields
    # are functions over the naturals and every "some / every call" is a
    # quantifier (`Slots`), the same encoding as the finite one otherwise.
    parametric: bool = False

    def __attrs_post_init__(self) -> None:
        unknown = sorted(self.ablations - set(ABLATIONS))
        if unknown:
            raise UnknownAblation(f"unknown ablation {unknown[0]!r}; valid: {', '.join(ABLATIONS)}")

    def ablated(self, name: str) -> bool:
        return name in self.ablations

    def bounds(self) -> str:
        """The abstraction bounds a proof in this system is limited to."""
        return (
            f"\u2264 {self.slots} calls, \u2264 {self.jobs} jobs, \u2264 {QUEUE_KEYS} queue keys, "
            f"\u2264 {self.rule_slots} rules, \u2264 {REGIONS} regions"
        )


def ablation_names() -> tuple[str, ...]:
    return tuple(ABLATIONS)


def check_ablations(names: Iterable[str]) -> frozenset[str]:
    """Validate ablation names (raises `UnknownAblation` on the first bad one)."""
    return LoopConfig(ablations=frozenset(names)).ablations
