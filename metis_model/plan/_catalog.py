"""The catalog as the plan model reads it, and the two cache signatures.

A cached plan stores, at registration, the *executor signature* (the name and
digest of every executor it uses) and the *family signature* (every executor
of the candidate families relevant to it: the families of the executors it
uses). On each hit both are computed again from the current catalog: a
changed or removed executor changes the first, a new alternative in a
relevant family the second (Metnos page, section 5).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping

from metis_trace import TERMINAL_TOOL
from metis_trace import ExecutorInfo
from metis_trace import Framework
from metis_trace import canonical_digest

__all__ = [
    "Catalog",
    "catalog_of",
    "executor_signature",
    "family_signature",
    "plan_executors",
    "plan_families",
]

Catalog = Mapping[str, ExecutorInfo]


def catalog_of(executors: Iterable[ExecutorInfo]) -> dict[str, ExecutorInfo]:
    return {e.name: e for e in executors}


def plan_executors(framework: Framework) -> tuple[str, ...]:
    """The executors a framework names (the terminal is not one), sorted."""
    return tuple(sorted({s.tool for s in framework.steps if s.tool != TERMINAL_TOOL}))


def plan_families(framework: Framework, catalog: Catalog) -> tuple[str, ...]:
    return tuple(sorted({catalog[n].family for n in plan_executors(framework) if n in catalog}))


def executor_signature(names: Iterable[str], catalog: Catalog) -> str | None:
    """Digest over (name, digest) of `names`; None if one is not in the catalog."""
    wanted = sorted(set(names))
    if any(n not in catalog for n in wanted):
        return None
    return canonical_digest([[n, catalog[n].digest] for n in wanted])


def family_signature(families: Iterable[str], catalog: Catalog) -> str:
    """Digest over the (family, name) pairs of every executor in `families`."""
    chosen = set(families)
    return canonical_digest(
        sorted([e.family, e.name] for e in catalog.values() if e.family in chosen)
    )
