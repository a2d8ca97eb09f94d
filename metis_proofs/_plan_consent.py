"""The plan path's consent binding in z3 (PLAN-9): `authorizes` as a formula.

`authorizes_z3` mirrors `metis_model.plan.authorizes` over the six binding
fields of an approval and an action (`SymAction`: integers, in
`BINDING_FIELDS` order) and whether the approval was used. `_consent_claim`
is PLAN-9: an approval admits only an equal action, once; an approval
granted in another turn admits nothing in this one. The ablation
`consent-not-bound-to-args` leaves the arguments' digest out of the binding.
Used by the PLAN-9 proof (`_plan.prove_plan`), its counterexample
(`_plan_cex`) and the agreement tests (`tests/plan/test_smt_agreement.py`).
"""

from __future__ import annotations

import attrs
import z3

from metis_model.plan import BINDING_FIELDS

from ._sorts import ands
from ._sorts import ors

__all__ = ["SymAction", "authorizes_z3"]


@attrs.frozen
class SymAction:
    fields: tuple[z3.ArithRef, ...]  # in BINDING_FIELDS order

    @classmethod
    def fresh(cls, prefix: str) -> SymAction:
        return cls(tuple(z3.Int(f"{prefix}{f}") for f in BINDING_FIELDS))

    def field(self, name: str) -> z3.ArithRef:
        return self.fields[BINDING_FIELDS.index(name)]


def authorizes_z3(
    approval: SymAction, action: SymAction, used: z3.BoolRef, ablation: str | None = None
) -> z3.BoolRef:
    compared = [
        f
        for f in BINDING_FIELDS
        if not (ablation == "consent-not-bound-to-args" and f == "args_digest")
    ]
    return z3.And(z3.Not(used), *[approval.field(f) == action.field(f) for f in compared])


def _consent_claim(ablation: str | None) -> z3.BoolRef:
    approvals = [SymAction.fresh(f"approval{i}.") for i in range(2)]
    used = [z3.Bool(f"approval{i}.used") for i in range(2)]
    action = SymAction.fresh("action.")
    admits = [authorizes_z3(a, action, u, ablation) for a, u in zip(approvals, used, strict=True)]
    bound = ands(
        z3.Implies(
            ok, z3.And(z3.Not(u), *[x == y for x, y in zip(a.fields, action.fields, strict=True)])
        )
        for ok, a, u in zip(admits, approvals, used, strict=True)
    )
    # Frequency never makes a permission: approvals of other turns admit nothing here.
    other_turns = z3.Implies(
        ands(a.field("turn") != action.field("turn") for a in approvals), z3.Not(ors(admits))
    )
    return z3.And(bound, other_turns)
