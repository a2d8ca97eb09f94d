"""The turn as a transition system (PLAN-4, PLAN-5, PLAN-6), pySMT style:
`init` / `trans` / `bad`.

`TurnSystem` is `_exec.protocol_step` over `SLOTS` (three) step slots, in
the vocabulary of `_plan_turn_sym`: `enabled` says which action
(`TurnParams`) the protocol allows in a state, `observe` what the state is
after it, `bad` which PLAN ID a state breaks, and `lemmas` the
strengthening. PLAN-4, PLAN-5, PLAN-6 hold by an inductive invariant
(1-induction: the lemmas plus "not bad" hold initially and are kept by every
step; `_plan.prove_plan`). The turn ablations (`EXEC_ABLATIONS`) weaken it;
BMC (`_plan_turn_bmc`) finds their shortest paths.
"""

from __future__ import annotations

import z3

from metis_model.plan._exec import ActKind
from metis_model.plan._exec import Failure
from metis_model.plan._exec import Outcome
from metis_model.plan._exec import SlotStatus
from metis_model.plan._exec import TurnPhase

from ._plan_turn_sym import ACT
from ._plan_turn_sym import FAILURE
from ._plan_turn_sym import OUTCOME
from ._plan_turn_sym import PHASE
from ._plan_turn_sym import STATUS
from ._plan_turn_sym import TurnParams
from ._plan_turn_sym import TurnVars
from ._sorts import ands
from ._sorts import ors

__all__ = ["SLOTS", "TurnSystem"]

SLOTS = 3


class TurnSystem:
    """`_exec.protocol_step` over SLOTS slots (`init` / `trans` / `bad`)."""

    def __init__(self, ablation: str | None = None, slots: int = SLOTS) -> None:
        self.ablation = ablation
        self.slots = slots

    def state(self, name: str) -> TurnVars:
        n = self.slots
        return TurnVars(
            tuple(STATUS.const(f"{name}.status{i}") for i in range(n)),
            tuple(z3.Bool(f"{name}.committed{i}") for i in range(n)),
            tuple(z3.Int(f"{name}.runs{i}") for i in range(n)),
            tuple(z3.Bool(f"{name}.repeated{i}") for i in range(n)),
            tuple(z3.Bool(f"mutating{i}") for i in range(n)),  # frozen: one name for all states
            PHASE.const(f"{name}.phase"),
            FAILURE.const(f"{name}.failure"),
            z3.Int(f"{name}.count"),
            z3.Int(f"{name}.recoveries"),
            z3.Bool(f"{name}.after_commit"),
            z3.Bool(f"{name}.after_operational"),
        )

    def params(self, name: str) -> TurnParams:
        return TurnParams(
            ACT.const(f"{name}.act"),
            z3.Int(f"{name}.slot"),
            OUTCOME.const(f"{name}.outcome"),
            z3.Bool(f"{name}.commit"),
        )

    def init(self, s: TurnVars) -> z3.BoolRef:
        return z3.And(
            *[x == STATUS[SlotStatus.PENDING] for x in s.status],
            *[z3.Not(c) for c in s.committed],
            *[r == 0 for r in s.runs],
            *[z3.Not(r) for r in s.repeated],
            s.phase == PHASE[TurnPhase.RUNNING],
            s.failure == FAILURE[Failure.NONE],
            s.count == 0,
            s.recoveries == 0,
            z3.Not(s.after_commit),
            z3.Not(s.after_operational),
        )

    def _next_pending(self, s: TurnVars) -> z3.ArithRef:
        out: z3.ArithRef = z3.IntVal(-1)
        for i in reversed(range(self.slots)):
            out = z3.If(s.status[i] == STATUS[SlotStatus.PENDING], i, out)
        return out

    def enabled(self, s: TurnVars, p: TurnParams) -> z3.BoolRef:
        running = s.phase == PHASE[TurnPhase.RUNNING]
        clear = s.failure == FAILURE[Failure.NONE]
        pending = self._next_pending(s)
        slot_mutating = ors(z3.And(p.slot == i, s.mutating[i]) for i in range(self.slots))
        run = z3.And(
            running,
            clear,
            p.slot == pending,
            pending >= 0,
            z3.Implies(p.commit, z3.And(slot_mutating, p.outcome != OUTCOME[Outcome.SKIP])),
        )
        recoverable = s.failure == FAILURE[Failure.STRUCTURAL]
        if self.ablation == "recover-operational":
            recoverable = z3.Or(recoverable, s.failure == FAILURE[Failure.OPERATIONAL])
        clean = z3.BoolVal(True) if self.ablation == "recovery-after-commit" else s.count == 0
        return ACT.table(
            p.act,
            {
                ActKind.RUN: run,
                ActKind.PAUSE: z3.And(running, clear, pending >= 0),
                ActKind.RESUME: s.phase == PHASE[TurnPhase.PAUSED],
                ActKind.RECOVER: z3.And(running, recoverable, clean, s.recoveries == 0),
                ActKind.END: z3.And(running, z3.Or(z3.Not(clear), pending < 0)),
            },
        )

    def observe(self, s: TurnVars, p: TurnParams, t: TurnVars) -> z3.BoolRef:
        """`_exec.observe`: `t` is `s` after the action `p`."""
        n = self.slots
        status_after = OUTCOME.table(
            p.outcome,
            {
                Outcome.OK: STATUS[SlotStatus.DONE],
                Outcome.SKIP: STATUS[SlotStatus.SKIPPED],
                Outcome.STRUCTURAL: STATUS[SlotStatus.FAILED],
                Outcome.OPERATIONAL: STATUS[SlotStatus.FAILED],
                Outcome.DENIED: STATUS[SlotStatus.FAILED],
            },
        )
        failure_after = OUTCOME.table(
            p.outcome,
            {
                Outcome.OK: s.failure,
                Outcome.SKIP: s.failure,
                Outcome.STRUCTURAL: FAILURE[Failure.STRUCTURAL],
                Outcome.OPERATIONAL: FAILURE[Failure.OPERATIONAL],
                Outcome.DENIED: FAILURE[Failure.DENIED],
            },
        )
        same_flags = z3.And(
            t.count == s.count,
            t.recoveries == s.recoveries,
            t.after_commit == s.after_commit,
            t.after_operational == s.after_operational,
        )
        kept = [  # slot i unchanged
            z3.And(
                t.status[i] == s.status[i],
                t.committed[i] == s.committed[i],
                t.runs[i] == s.runs[i],
                t.repeated[i] == s.repeated[i],
            )
            for i in range(n)
        ]
        keep_slots = ands(kept)
        # RUN
        commits = [
            z3.And(p.slot == i, p.commit, s.mutating[i], p.outcome != OUTCOME[Outcome.SKIP])
            for i in range(n)
        ]
        run = z3.And(
            *[
                z3.If(
                    p.slot == i,
                    z3.And(
                        t.status[i] == status_after,
                        t.committed[i] == z3.Or(s.committed[i], commits[i]),
                        t.runs[i] == s.runs[i] + 1,
                        t.repeated[i] == z3.Or(s.repeated[i], s.committed[i]),
                    ),
                    kept[i],
                )
                for i in range(n)
            ],
            t.phase == s.phase,
            t.failure == failure_after,
            t.count == s.count + z3.Sum([z3.If(c, 1, 0) for c in commits]),
            t.recoveries == s.recoveries,
            t.after_commit == s.after_commit,
            t.after_operational == s.after_operational,
        )
        pause = z3.And(
            keep_slots, t.phase == PHASE[TurnPhase.PAUSED], t.failure == s.failure, same_flags
        )
        if self.ablation == "resume-repeats-mutation":
            resumed_slots = ands(
                z3.And(
                    t.status[i] == STATUS[SlotStatus.PENDING],
                    t.committed[i] == s.committed[i],
                    t.runs[i] == s.runs[i],
                    t.repeated[i] == s.repeated[i],
                )
                for i in range(n)
            )
        else:
            resumed_slots = keep_slots
        resume = z3.And(
            resumed_slots, t.phase == PHASE[TurnPhase.RUNNING], t.failure == s.failure, same_flags
        )
        recover = z3.And(
            *[
                z3.And(
                    t.status[i] == STATUS[SlotStatus.PENDING],
                    z3.Not(t.committed[i]),
                    t.runs[i] == 0,
                    z3.Not(t.repeated[i]),
                )
                for i in range(n)
            ],
            t.phase == s.phase,
            t.failure == FAILURE[Failure.NONE],
            t.count == s.count,
            t.recoveries == s.recoveries + 1,
            t.after_commit == z3.Or(s.after_commit, s.count > 0),
            t.after_operational
            == z3.Or(s.after_operational, s.failure == FAILURE[Failure.OPERATIONAL]),
        )
        end = z3.And(
            keep_slots, t.phase == PHASE[TurnPhase.ENDED], t.failure == s.failure, same_flags
        )
        return ACT.table(
            p.act,
            {
                ActKind.RUN: run,
                ActKind.PAUSE: pause,
                ActKind.RESUME: resume,
                ActKind.RECOVER: recover,
                ActKind.END: end,
            },
        )

    def trans(self, s: TurnVars, p: TurnParams, t: TurnVars) -> z3.BoolRef:
        return z3.And(p.slot >= 0, p.slot < self.slots, self.enabled(s, p), self.observe(s, p, t))

    def bad(self, s: TurnVars, inv: str) -> z3.BoolRef:
        if inv == "PLAN-4":
            return z3.Or(s.recoveries > 1, s.after_commit)
        if inv == "PLAN-5":
            return s.after_operational
        assert inv == "PLAN-6"
        return ors(s.repeated)

    def lemmas(self, s: TurnVars) -> z3.BoolRef:
        """The strengthening: a pending slot never ran, no slot ran twice, counts
        are never negative, at most one recovery."""
        return z3.And(
            *[
                z3.And(
                    z3.Implies(
                        s.status[i] == STATUS[SlotStatus.PENDING],
                        z3.And(s.runs[i] == 0, z3.Not(s.committed[i])),
                    ),
                    s.runs[i] >= 0,
                    s.runs[i] <= 1,
                )
                for i in range(self.slots)
            ],
            s.count >= 0,
            s.recoveries >= 0,
            s.recoveries <= 1,
        )
