"""The turn's symbolic vocabulary (PLAN-4, PLAN-5, PLAN-6): one state and one
action of `metis_model.plan._exec`'s protocol as z3 terms, built from its
enums.

`STATUS`, `PHASE`, `FAILURE`, `OUTCOME` and `ACT` are `SlotStatus`,
`TurnPhase`, `Failure`, `Outcome` and `ActKind` as z3 enumerations.
`TurnVars` is an `ExecState`: per step slot its status, whether it committed,
how often it ran, whether it ran again after a commit and whether it
mutates; the phase, the failure, the commit count, the recoveries, and
whether a recovery came after a commit or an operational error. `TurnParams`
is an `Act`: the kind, the slot, the outcome and whether it commits. Shared
by the turn system (`_plan_turn`) and its decoding and BMC
(`_plan_turn_bmc`).
"""

from __future__ import annotations

import attrs
import z3

from metis_model.plan._exec import ActKind
from metis_model.plan._exec import Failure
from metis_model.plan._exec import Outcome
from metis_model.plan._exec import SlotStatus
from metis_model.plan._exec import TurnPhase

from ._sorts import finite_enum

__all__ = ["ACT", "FAILURE", "OUTCOME", "PHASE", "STATUS", "TurnParams", "TurnVars"]

STATUS = finite_enum(SlotStatus)
PHASE = finite_enum(TurnPhase)
FAILURE = finite_enum(Failure)
OUTCOME = finite_enum(Outcome)
ACT = finite_enum(ActKind)


@attrs.frozen
class TurnVars:
    status: tuple[z3.ExprRef, ...]
    committed: tuple[z3.BoolRef, ...]
    runs: tuple[z3.ArithRef, ...]
    repeated: tuple[z3.BoolRef, ...]
    mutating: tuple[z3.BoolRef, ...]
    phase: z3.ExprRef
    failure: z3.ExprRef
    count: z3.ArithRef
    recoveries: z3.ArithRef
    after_commit: z3.BoolRef
    after_operational: z3.BoolRef


@attrs.frozen
class TurnParams:
    act: z3.ExprRef
    slot: z3.ArithRef
    outcome: z3.ExprRef
    commit: z3.BoolRef
