"""z3 sorts built from the model's own enums, so a name is spelled only once.

Every finite vocabulary of the model (modes, stages, classes, event kinds, ...)
becomes a z3 `EnumSort` whose constructors are derived from the Python values.
Constructor names carry the sort name as a prefix (`Decision.allow`) because
SMT-LIB constructors share one namespace and `allow` is both a decision and a
rule behaviour.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from enum import Enum
from functools import cache
from typing import Any
from typing import Generic
from typing import TypeVar

import z3

K = TypeVar("K", bound=Hashable)


class Finite(Generic[K]):
    """A finite Python vocabulary and its z3 enumeration sort."""

    def __init__(self, name: str, members: Iterable[K], label: Mapping[K, str] | None = None):
        self.name = name
        self.members: tuple[K, ...] = tuple(members)
        labels = [f"{name}.{(label or {}).get(m, _text(m))}" for m in self.members]
        self.sort, consts = z3.EnumSort(name, labels)
        self._to_z3: dict[K, z3.ExprRef] = dict(zip(self.members, consts, strict=True))
        self._from_z3: dict[str, K] = {str(c): m for m, c in self._to_z3.items()}
        _BY_SORT[name] = self

    def __getitem__(self, member: K) -> z3.ExprRef:
        return self._to_z3[member]

    def const(self, name: str) -> z3.ExprRef:
        return z3.Const(name, self.sort)

    def decode(self, value: z3.ExprRef) -> K:
        """The Python member a z3 value (from a model) stands for."""
        return self._from_z3[str(value)]

    def is_in(self, expr: z3.ExprRef, members: Iterable[K]) -> z3.BoolRef:
        return ors(expr == self[m] for m in members)

    def table(self, expr: z3.ExprRef, value: Mapping[K, z3.ExprRef]) -> z3.ExprRef:
        """`value[expr]` as an If-chain over every member (a total lookup)."""
        *rest, last = self.members
        out = value[last]
        for m in reversed(rest):
            out = z3.If(expr == self[m], value[m], out)
        return out


_BY_SORT: dict[str, Finite[Any]] = {}


def decode_value(value: z3.ExprRef) -> object:
    """A model value as Python: bool, int, or the enum member / name it encodes."""
    if z3.is_bool(value):
        return z3.is_true(value)
    if z3.is_int_value(value):
        return value.as_long()
    return _BY_SORT[value.sort().name()].decode(value)


def encode_value(var: z3.ExprRef, value: object) -> z3.ExprRef:
    """The z3 constant for a Python value, in the sort of `var`."""
    if z3.is_bool(var):
        return z3.BoolVal(bool(value))
    if z3.is_int(var):
        assert isinstance(value, int)
        return z3.IntVal(value)
    return _BY_SORT[var.sort().name()][value]


def _text(member: object) -> str:
    return str(member.value) if isinstance(member, Enum) else str(member)


E = TypeVar("E", bound=Enum)


@cache
def finite_enum(enum: type[E]) -> Finite[E]:
    """The one z3 sort for a Python enum (cached: z3 sorts must not be redeclared)."""
    return Finite(enum.__name__, list(enum))


@cache
def finite_names(name: str, members: tuple[str, ...]) -> Finite[str]:
    """The one z3 sort for a tuple of names (event kinds, invariant IDs)."""
    return Finite(name, members, {m: m.replace("-", "_") for m in members})


def ors(terms: Iterable[z3.BoolRef | bool]) -> z3.BoolRef:
    """Or over a list that may be empty (z3 prints an empty `or` as bare `or`)."""
    items = list(terms)
    return z3.Or(items) if items else z3.BoolVal(False)


def timed(solver: z3.Solver, timeout_s: float | None) -> z3.Solver:
    """`solver`, made to give up (unknown) after `timeout_s` seconds, at least 1 ms;
    with None, never."""
    if timeout_s is not None:
        solver.set("timeout", max(1, int(timeout_s * 1000)))
    return solver


def ands(terms: Iterable[z3.BoolRef | bool]) -> z3.BoolRef:
    items = list(terms)
    return z3.And(items) if items else z3.BoolVal(True)
