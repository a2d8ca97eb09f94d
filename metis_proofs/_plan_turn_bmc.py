"""The turn system's paths (PLAN-4, PLAN-5, PLAN-6): concrete states in and
out, and the shortest path to a bad state.

`concrete_turn_state` and `concrete_act` pin a `TurnVars` or `TurnParams`
(`_plan_turn_sym`) to the Python model's `ExecState` or `Act` (for the
agreement tests, `tests/plan/test_smt_agreement.py`); `decode_turn_state`
and `decode_act` read them back out of a z3 model. `turn_bmc` searches
`TurnSystem` (`_plan_turn`) from `init` by BMC for the shortest `TurnPath`
reaching `bad(inv)`: used when induction does not close
(`_plan.prove_plan`) and for the turn ablations' counterexample turn logs
(`_plan_cex`).
"""

from __future__ import annotations

from typing import Any

import attrs
import z3

from metis_model.plan._exec import Act
from metis_model.plan._exec import ExecState
from metis_model.plan._exec import Outcome
from metis_model.plan._exec import Slot

from ._plan_turn import TurnSystem
from ._plan_turn_sym import ACT
from ._plan_turn_sym import FAILURE
from ._plan_turn_sym import OUTCOME
from ._plan_turn_sym import PHASE
from ._plan_turn_sym import STATUS
from ._plan_turn_sym import TurnParams
from ._plan_turn_sym import TurnVars
from ._sorts import timed

__all__ = [
    "TurnPath",
    "concrete_act",
    "concrete_turn_state",
    "decode_act",
    "decode_turn_state",
    "turn_bmc",
]


def concrete_turn_state(system: TurnSystem, s: TurnVars, state: ExecState) -> z3.BoolRef:
    """`s` equals the Python model's `state` (for the agreement tests)."""
    return z3.And(
        *[s.status[i] == STATUS[x.status] for i, x in enumerate(state.slots)],
        *[s.committed[i] == x.committed for i, x in enumerate(state.slots)],
        *[s.runs[i] == x.runs for i, x in enumerate(state.slots)],
        *[s.repeated[i] == x.repeated for i, x in enumerate(state.slots)],
        *[s.mutating[i] == x.mutating for i, x in enumerate(state.slots)],
        s.phase == PHASE[state.phase],
        s.failure == FAILURE[state.failure],
        s.count == state.committed,
        s.recoveries == state.recoveries,
        s.after_commit == state.recovered_after_commit,
        s.after_operational == state.recovered_after_operational,
    )


def concrete_act(p: TurnParams, act: Act) -> z3.BoolRef:
    return z3.And(
        p.act == ACT[act.kind],
        p.slot == act.slot,
        p.outcome == OUTCOME[act.outcome],
        p.commit == act.commit,
    )


def decode_turn_state(model: z3.ModelRef, s: TurnVars, slots: int) -> ExecState:
    def ev(x: z3.ExprRef) -> Any:
        return model.eval(x, model_completion=True)

    return ExecState(
        slots=tuple(
            Slot(
                z3.is_true(ev(s.mutating[i])),
                STATUS.decode(ev(s.status[i])),
                z3.is_true(ev(s.committed[i])),
                ev(s.runs[i]).as_long(),
                z3.is_true(ev(s.repeated[i])),
            )
            for i in range(slots)
        ),
        phase=PHASE.decode(ev(s.phase)),
        failure=FAILURE.decode(ev(s.failure)),
        committed=ev(s.count).as_long(),
        recoveries=ev(s.recoveries).as_long(),
        recovered_after_commit=z3.is_true(ev(s.after_commit)),
        recovered_after_operational=z3.is_true(ev(s.after_operational)),
    )


def decode_act(model: z3.ModelRef, p: TurnParams) -> Act:
    def ev(x: z3.ExprRef) -> Any:
        return model.eval(x, model_completion=True)

    return Act(
        ACT.decode(ev(p.act)),
        ev(p.slot).as_long(),
        OUTCOME.decode(ev(p.outcome)),
        z3.is_true(ev(p.commit)),
    )


@attrs.frozen
class TurnPath:
    """A path of the turn system from `init`: the states and the actions."""

    states: tuple[ExecState, ...]
    acts: tuple[Act, ...]
    violation: str


def turn_bmc(
    system: TurnSystem,
    inv: str,
    max_depth: int = 8,
    timeout_s: float | None = None,
) -> TurnPath | None:
    """The shortest path reaching `bad(inv)`. Among the shortest, one whose
    runs succeed or fail structurally (operationally, for PLAN-5), since a
    concrete turn log shows that most plainly."""
    solver = timed(z3.Solver(), timeout_s)
    states = [system.state("s0")]
    params: list[TurnParams] = []
    solver.add(system.init(states[0]))
    failing = Outcome.OPERATIONAL if inv == "PLAN-5" else Outcome.STRUCTURAL
    plain = z3.Bool("plain-outcomes")
    for k in range(1, max_depth + 1):
        p = system.params(f"p{k - 1}")
        t = system.state(f"s{k}")
        solver.add(system.trans(states[-1], p, t))
        solver.add(
            z3.Implies(
                plain, z3.Or(p.outcome == OUTCOME[Outcome.OK], p.outcome == OUTCOME[failing])
            )
        )
        params.append(p)
        states.append(t)
        lit = z3.Bool(f"bad@{k}")
        solver.add(z3.Implies(lit, system.bad(t, inv)))
        if solver.check(lit) != z3.sat:
            continue
        if solver.check(lit, plain) != z3.sat:
            solver.check(lit)
        m = solver.model()
        return TurnPath(
            tuple(decode_turn_state(m, s, system.slots) for s in states),
            tuple(decode_act(m, q) for q in params),
            inv,
        )
    return None
