"""A decision's matching rules as z3 terms, and how the encoding ranges over them.

The stages of `_perm.resolve_z3` read the rules only through `RuleAccess`:
`SlotRules` is a fixed tuple of slots (the proofs' facts), and
`_rule_cutoff.UnboundedRules` the same notions over unboundedly many rules
(functions over the naturals, quantifiers for "some rule"). "Which rule
speaks for a behaviour" is one definition (`beaten`) for both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Protocol
from typing import TypeAlias

import attrs
import z3

from metis_trace import AUTHORITY
from metis_trace import RuleBehavior
from metis_trace import Source

from ._sorts import finite_enum
from ._sorts import ors

__all__ = [
    "BEHAVIOR",
    "SOURCE",
    "Index",
    "RuleAccess",
    "RulePred",
    "SlotRules",
    "SymRule",
    "authority_rank",
    "beaten",
    "matches",
    "outranks",
]

BEHAVIOR = finite_enum(RuleBehavior)
SOURCE = finite_enum(Source)
# A rule's position: a slot number or a z3 integer (`_rule_cutoff`).
Index: TypeAlias = Any


@attrs.frozen
class SymRule:
    present: z3.BoolRef
    behavior: z3.ExprRef
    source: z3.ExprRef
    recency: z3.ArithRef


def authority_rank(source: z3.ExprRef) -> z3.ArithRef:
    """Index in `AUTHORITY` (0 = most authoritative), as a term."""
    return SOURCE.table(source, {s: z3.IntVal(AUTHORITY.index(s)) for s in Source})


RulePred = Callable[[SymRule], z3.BoolRef]


def matches(r: SymRule, behavior: RuleBehavior) -> z3.BoolRef:
    return z3.And(r.present, r.behavior == BEHAVIOR[behavior])


def outranks(a: SymRule, b: SymRule) -> z3.BoolRef:
    """`a` speaks before `b`: higher authority, then more recent."""
    ra, rb = authority_rank(a.source), authority_rank(b.source)
    return z3.Or(ra < rb, z3.And(ra == rb, a.recency > b.recency))


def beaten(r: SymRule, i: Index, o: SymRule, j: Index, behavior: RuleBehavior) -> z3.BoolRef:
    """Rule `o` (at j != i) speaks for `behavior` rather than `r` (at i): it
    matches and outranks it, or ties with it from an earlier position."""
    earlier = j < i
    first = z3.Not(outranks(r, o))
    later = outranks(o, r)
    if isinstance(earlier, bool):
        return z3.And(matches(o, behavior), first if earlier else later)
    return z3.And(matches(o, behavior), z3.If(earlier, first, later))


class RuleAccess(Protocol):
    """How a decision ranges over its matching rules: a tuple of slots
    (`SlotRules`), or unboundedly many (`_rule_cutoff.UnboundedRules`). The
    stages below read the rules only through it, so both share one text."""

    def some(self, pred: RulePred) -> z3.BoolRef: ...

    def strongest(self, behavior: RuleBehavior) -> z3.ArithRef:
        """Index of the rule that speaks for `behavior`, -1 for none."""
        ...

    def at(self, index: z3.ArithRef) -> SymRule: ...


@attrs.frozen
class SlotRules:
    rules: tuple[SymRule, ...]

    def some(self, pred: RulePred) -> z3.BoolRef:
        return ors([pred(r) for r in self.rules])

    def strongest(self, behavior: RuleBehavior) -> z3.ArithRef:
        """First slot of highest authority, then recency (Python `_strongest`)."""
        out: z3.ArithRef = z3.IntVal(-1)
        rules = self.rules
        for i in reversed(range(len(rules))):
            others = [z3.Not(beaten(rules[i], i, o, j, behavior)) for j, o in enumerate(rules)]
            del others[i]
            out = z3.If(z3.And(matches(rules[i], behavior), *others), z3.IntVal(i), out)
        return out

    def at(self, index: z3.ArithRef) -> SymRule:
        none = (BEHAVIOR[RuleBehavior.ALLOW], SOURCE[AUTHORITY[0]])  # read only if present
        out = SymRule(z3.BoolVal(False), *none, z3.IntVal(0))
        for i in reversed(range(len(self.rules))):
            r, hit = self.rules[i], index == i
            out = SymRule(
                z3.If(hit, r.present, out.present),
                z3.If(hit, r.behavior, out.behavior),
                z3.If(hit, r.source, out.source),
                z3.If(hit, r.recency, out.recency),
            )
        return out
