"""The spawn guard's symbolic vocabulary (CHILD-4): one guard input and one
decision as z3 terms, built from `metis_model._agents`' own names.

`CODE` is `RefusalCode` as a z3 enumeration. `SymLimits` is `GuardLimits`
without the timeout; `SymGuard` is one guard state and one request as
`guard_decision` reads them: every limit and count an unbounded integer,
plus whether the request's (agent, task hash) is already in the ledger and
whether it carries `force` or a rationale; `SymDecision` is `Admit | Refusal`.
Shared by the pieces of CHILD-4's proof (`_guard.prove_spawn_guard`): the
mirror (`_guard_mirror`), the claim (`_guard_claim`), the ledger
(`_guard_system`) and the decoding (`_guard_decode`).
"""

from __future__ import annotations

import attrs
import z3

from metis_model._agents import GuardLimits
from metis_model._agents import GuardState
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest

from ._sorts import ands
from ._sorts import finite_enum

__all__ = ["CODE", "SymDecision", "SymGuard", "SymLimits"]

CODE = finite_enum(RefusalCode)


@attrs.frozen
class SymLimits:
    """`GuardLimits` without the timeout (not part of the decision)."""

    max_depth: z3.ArithRef
    max_total: z3.ArithRef
    max_per_parent: z3.ArithRef
    max_concurrent: z3.ArithRef

    @classmethod
    def fresh(cls, prefix: str) -> SymLimits:
        return cls(*(z3.Int(f"{prefix}{f.name}") for f in attrs.fields(cls)))

    @classmethod
    def of(cls, limits: GuardLimits) -> SymLimits:
        return cls(*(z3.IntVal(getattr(limits, f.name)) for f in attrs.fields(cls)))

    def values(self) -> tuple[z3.ArithRef, ...]:
        return tuple(getattr(self, f.name) for f in attrs.fields(type(self)))

    def non_negative(self) -> z3.BoolRef:
        return ands(v >= 0 for v in self.values())


@attrs.frozen
class SymGuard:
    """One guard state and one request, as `guard_decision` reads them."""

    limits: SymLimits
    parent_depth: z3.ArithRef  # request.parent_depth
    total: z3.ArithRef  # state.total
    children: z3.ArithRef  # state.per_parent.get(request.parent_id, 0)
    running: z3.ArithRef  # len(state.running)
    known_task: z3.BoolRef  # request.key in state.tasks
    override: z3.BoolRef  # request.overrides_duplicate (force or a rationale)

    @classmethod
    def fresh(cls, prefix: str) -> SymGuard:
        depth, total, children, running = (
            z3.Int(f"{prefix}{n}") for n in ("parent_depth", "total", "children", "running")
        )
        return cls(
            SymLimits.fresh(f"{prefix}limit."),
            depth,
            total,
            children,
            running,
            z3.Bool(f"{prefix}known_task"),
            z3.Bool(f"{prefix}override"),
        )

    @classmethod
    def of(cls, state: GuardState, request: SpawnRequest) -> SymGuard:
        """The abstraction of a concrete guard state and request."""
        return cls(
            SymLimits.of(state.limits),
            z3.IntVal(request.parent_depth),
            z3.IntVal(state.total),
            z3.IntVal(state.per_parent.get(request.parent_id, 0)),
            z3.IntVal(len(state.running)),
            z3.BoolVal(request.key in state.tasks),
            z3.BoolVal(request.overrides_duplicate),
        )


@attrs.frozen
class SymDecision:
    """`Admit | Refusal`: `code` means something only when not `admitted`."""

    admitted: z3.BoolRef
    code: z3.ExprRef
