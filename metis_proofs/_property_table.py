"""The proved properties, by ID: the table `metis prove` runs, in its order.

Each `Property` names its invariant (which must exist in the invariant
table), a title and how it is proved: "smt" (a claim: `_properties.prove_claim`)
or "k-induction" (the loop system: `_loop_session.LoopSession`). The proofs'
default depth and timeouts are here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from metis_model._invariants import BY_ID

__all__ = [
    "BY_PROPERTY",
    "DEFAULT_DEPTH",
    "DEFAULT_TIMEOUT_S",
    "PROPERTIES",
    "WIDTHS_TIMEOUT_S",
    "Property",
    "UnknownProperty",
    "get_property",
    "property_ids",
]


DEFAULT_DEPTH = 20
DEFAULT_TIMEOUT_S = 120.0
# Per query of the all-widths proof (an MBQI timeout: the finite scope stands).
WIDTHS_TIMEOUT_S = 10.0


@attrs.frozen
class Property:
    id: str
    invariant: str
    title: str
    method: str  # "smt" | "k-induction"


def _p(inv: str, title: str, method: str) -> Property:
    return Property(inv, inv, title, method)


PROPERTIES: tuple[Property, ...] = (
    _p("PERM-1", "the staged order is total: one stage decides", "smt"),
    _p("PERM-2", "deny dominates any allow", "smt"),
    _p("PERM-3", "bypass-immune checks hold in every mode", "smt"),
    _p("PERM-4", "plan admits no mutating effect", "smt"),
    _p("PERM-5", "dontAsk never returns ask", "smt"),
    _p("PERM-6", "headless never leaves an ask pending", "smt"),
    _p("CHILD-2", "a child gate is never more permissive", "smt"),
    _p("CHILD-4", "spawn guard: check order, counts within limits", "smt"),
    _p("AUTH-1", "no effect without allow or approval", "k-induction"),
    _p("AUTH-2", "batch preflight before any effect", "k-induction"),
    _p("CLOSE-1", "at most one result per occurrence", "k-induction"),
    _p("CLOSE-2", "closed before next request / end", "k-induction"),
    _p("CLOSE-3", "results in call order", "k-induction"),
    _p("CLOSE-4", "no result without an open call", "k-induction"),
    _p("CLOSE-5", "repair stubs exactly the open calls", "k-induction"),
    _p("CLOSE-6", "compaction never splits a call", "k-induction"),
    _p("SCHED-1", "exclusive runs alone", "k-induction"),
    _p("SCHED-2", "queue: FIFO per key, no overlap", "k-induction"),
    _p("SCHED-3", "exclusive is a barrier", "k-induction"),
    _p("SCHED-4", "background handshake pairing", "k-induction"),
    _p("SCHED-5", "cancel needs a cancel or interrupt", "k-induction"),
    _p("SCHED-6", "reads never overlap writes", "k-induction"),
    _p("AUTH-3", "no effect outside the tool surface", "k-induction"),
    _p("RETRY-1", "no automatic re-run after commit", "k-induction"),
    _p("RETRY-2", "commits in the trace before reports", "k-induction"),
    _p("RETRY-3", "resume tells unknown from not run", "k-induction"),
    _p("CHILD-1", "a child sees no tool its parent lacks", "k-induction"),
    _p("CHILD-3", "plan parent, plan-locked child", "k-induction"),
    _p("CHILD-6", "hooks run before decisions, vetoes deny", "k-induction"),
    _p("LOOP-1", "every event enabled in its phase", "k-induction"),
    _p("LOOP-2", "completed only after an answer", "k-induction"),
    _p("PLAN-2", "references read completed earlier steps", "smt"),
    _p("PLAN-4", "one recovery, never after a commit", "smt"),
    _p("PLAN-5", "operational errors are not recovered", "smt"),
    _p("PLAN-6", "resume never repeats a committed mutation", "smt"),
    _p("PLAN-7", "a cache hit has the current signatures", "smt"),
    _p("PLAN-8", "a cache hit is grounded", "smt"),
    _p("PLAN-9", "an approval admits only its action", "smt"),
    _p("PLAN-12", "the step cap is never raised", "smt"),
)
BY_PROPERTY: Mapping[str, Property] = MappingProxyType({p.id: p for p in PROPERTIES})
for _prop in PROPERTIES:  # an ID must exist in the invariant table
    BY_ID[_prop.invariant]


class UnknownProperty(KeyError):
    pass


def property_ids() -> tuple[str, ...]:
    return tuple(p.id for p in PROPERTIES)


def get_property(prop_id: str) -> Property:
    try:
        return BY_PROPERTY[prop_id]
    except KeyError:
        raise UnknownProperty(
            f"unknown property {prop_id!r}; valid: {', '.join(BY_PROPERTY)}"
        ) from None
