"""The plan path in z3: cache validity, consent binding, references, the turn.

One encoding of `metis_model.plan`, built from its enums (`MissReason`,
`PlanPath`, `SlotStatus`, `TurnPhase`, `Failure`, `Outcome`, `ActKind`) and
tested to agree with the Python model on concrete states
(`tests/plan/test_smt_agreement.py`):

* `probe_z3` mirrors `probe` check by check over symbolic signatures (each
  an unbounded integer: equal or not is what matters), the epoch, whether
  every executor is still present, grounding, the path and the champion flag.
  PLAN-7: a hit means equal signatures and epoch; PLAN-8: a hit means
  grounded; both with the miss reason being the first failing check.
* `authorizes_z3` mirrors `authorizes` over the six binding fields of an
  approval and an action (integers) and whether it was used. PLAN-9: an
  approval admits only an equal action, once; an approval granted in another
  turn admits nothing in this one.
* `framework_z3` mirrors the shape, cap and reference checks of `validate`
  and the batching of `batches` over frameworks of up to `HARD_STEP_MAX + 2`
  steps with two reference slots each. PLAN-2: in a valid framework every
  reference reads a step of an earlier batch (completed before its reader's
  batch starts); PLAN-12: a valid framework has at most `min(cap, 16)` steps
  for every integer cap, so a cached entry validated under any other cap
  cannot raise it.
* `TurnSystem` is `_exec`'s protocol as a transition system (pySMT style:
  `init` / `trans` / `bad`) over three step slots. PLAN-4, PLAN-5, PLAN-6 hold
  by an inductive invariant (1-induction: the lemmas plus "not bad" hold
  initially and are kept by every step).

Ablations (`PLAN_ABLATIONS`) weaken one decision each; each must be refuted,
with a minimal counterexample turn log (`find_plan_counterexample`) that
`check_turn_log` rejects with the ablation's ID.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import z3

from metis_model.plan import BINDING_FIELDS, MISS_ORDER
from metis_model.plan._exec import (
    EXEC_ABLATIONS,
    Act,
    ActKind,
    ExecState,
    Failure,
    Outcome,
    Slot,
    SlotStatus,
    TurnPhase,
)
from metis_trace import HARD_STEP_MAX, MissReason, PlanPath

from ._results import ALL_INPUTS, NO_CLAIM, ProofResult, Verdict, refuted_scope, smt_result
from ._smt2 import Query, smt2_query, write_smt2
from ._sorts import ands, finite_enum, ors, timed

__all__ = [
    "ACT",
    "FAILURE",
    "MISS",
    "OUTCOME",
    "PHASE",
    "PLAN_ABLATIONS",
    "PLAN_PROPERTIES",
    "STATUS",
    "SymAction",
    "SymFramework",
    "SymProbe",
    "TurnSystem",
    "authorizes_z3",
    "batches_z3",
    "framework_z3",
    "probe_z3",
    "prove_plan",
]

MISS = finite_enum(MissReason)
PATH = finite_enum(PlanPath)
STATUS = finite_enum(SlotStatus)
PHASE = finite_enum(TurnPhase)
FAILURE = finite_enum(Failure)
OUTCOME = finite_enum(Outcome)
ACT = finite_enum(ActKind)

PLAN_ABLATIONS: Mapping[str, str] = MappingProxyType(
    {
        "cache-ignores-signature": "PLAN-7",
        "cache-ignores-grounding": "PLAN-8",
        "consent-not-bound-to-args": "PLAN-9",
        **EXEC_ABLATIONS,
        "references-not-checked": "PLAN-2",
        "cap-from-proposer": "PLAN-12",
    }
)
SLOTS = 3
BMC_DEPTH = 10  # the turn system's search when induction does not close
STEP_SLOTS = HARD_STEP_MAX + 2
REF_SLOTS = 2


# --- cache validity (PLAN-7, PLAN-8) ---------------------------------------------------


@attrs.frozen
class SymProbe:
    stored_executors: z3.ArithRef
    current_executors: z3.ArithRef
    present: z3.BoolRef  # every executor of the plan is in the catalog
    stored_families: z3.ArithRef
    current_families: z3.ArithRef
    stored_epoch: z3.ArithRef
    current_epoch: z3.ArithRef
    grounded: z3.BoolRef
    path: z3.ExprRef
    champion: z3.BoolRef

    @classmethod
    def fresh(cls, prefix: str) -> SymProbe:
        ints = {n: z3.Int(prefix + n) for n in ("se", "ce", "sf", "cf", "sp", "cp")}
        return cls(
            ints["se"],
            ints["ce"],
            z3.Bool(prefix + "present"),
            ints["sf"],
            ints["cf"],
            ints["sp"],
            ints["cp"],
            z3.Bool(prefix + "grounded"),
            PATH.const(prefix + "path"),
            z3.Bool(prefix + "champion"),
        )


def probe_z3(p: SymProbe, ablation: str | None = None) -> tuple[z3.BoolRef, z3.ExprRef]:
    """(hit, reason) as `probe` decides them; `reason` is meaningful on a miss."""
    checks: dict[MissReason, z3.BoolRef] = {
        MissReason.EXECUTOR_REMOVED: z3.Not(p.present),
        MissReason.EXECUTOR_CHANGED: p.stored_executors != p.current_executors,
        MissReason.NEW_ALTERNATIVE: p.stored_families != p.current_families,
        MissReason.EPOCH_CHANGED: p.stored_epoch != p.current_epoch,
        MissReason.NOT_GROUNDED: z3.Not(p.grounded),
        MissReason.NOT_CHAMPION: z3.And(p.path == PATH[PlanPath.L1], z3.Not(p.champion)),
    }
    if ablation == "cache-ignores-signature":
        checks[MissReason.EXECUTOR_CHANGED] = z3.BoolVal(False)
    if ablation == "cache-ignores-grounding":
        checks[MissReason.NOT_GROUNDED] = z3.BoolVal(False)
    reason: z3.ExprRef = MISS[MISS_ORDER[-1]]
    for r in reversed(MISS_ORDER):
        reason = z3.If(checks[r], MISS[r], reason)
    return z3.Not(ors(checks.values())), reason


def _cache_claim(inv: str, ablation: str | None) -> z3.BoolRef:
    """The spec, written without `probe_z3`: a hit means the signatures and the
    epoch are current (PLAN-7) or the plan is grounded (PLAN-8); a miss names
    the first condition of MISS_ORDER that fails."""
    p = SymProbe.fresh("probe.")
    hit, reason = probe_z3(p, ablation)
    spec = [
        (MissReason.EXECUTOR_REMOVED, p.present),
        (MissReason.EXECUTOR_CHANGED, p.stored_executors == p.current_executors),
        (MissReason.NEW_ALTERNATIVE, p.stored_families == p.current_families),
        (MissReason.EPOCH_CHANGED, p.stored_epoch == p.current_epoch),
        (MissReason.NOT_GROUNDED, p.grounded),
        (MissReason.NOT_CHAMPION, z3.Or(p.path != PATH[PlanPath.L1], p.champion)),
    ]
    current = ands(ok for r, ok in spec[:4])
    claim = z3.Implies(hit, current if inv == "PLAN-7" else p.grounded)
    first = ands(
        z3.Implies(
            z3.And(z3.Not(ok), *[earlier for _, earlier in spec[:i]]),
            z3.And(z3.Not(hit), reason == MISS[r]),
        )
        for i, (r, ok) in enumerate(spec)
    )
    return z3.And(claim, first)


# --- consent binding (PLAN-9) -----------------------------------------------------------


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


# --- references and the cap (PLAN-2, PLAN-12) -----------------------------------------------


@attrs.frozen
class SymFramework:
    """`n` steps (the last must be the terminal); per step whether it is the
    terminal and up to REF_SLOTS references (present, target step number)."""

    n: z3.ArithRef
    terminal: tuple[z3.BoolRef, ...]
    present: tuple[tuple[z3.BoolRef, ...], ...]
    target: tuple[tuple[z3.ArithRef, ...], ...]

    @classmethod
    def fresh(cls, prefix: str, slots: int = STEP_SLOTS) -> SymFramework:
        return cls(
            z3.Int(prefix + "n"),
            tuple(z3.Bool(f"{prefix}term{i}") for i in range(slots)),
            tuple(
                tuple(z3.Bool(f"{prefix}ref{i}.{j}") for j in range(REF_SLOTS))
                for i in range(slots)
            ),
            tuple(
                tuple(z3.Int(f"{prefix}to{i}.{j}") for j in range(REF_SLOTS)) for i in range(slots)
            ),
        )

    @property
    def slots(self) -> int:
        return len(self.terminal)

    def active(self, i: int) -> z3.BoolRef:
        return z3.IntVal(i) < self.n

    def is_terminal(self, step: z3.ArithRef) -> z3.BoolRef:
        """Whether 1-based step number `step` is a terminal."""
        return ors(z3.And(step == i + 1, self.terminal[i]) for i in range(self.slots))


def framework_z3(f: SymFramework, cap: z3.ArithRef, ablation: str | None = None) -> z3.BoolRef:
    """`validate` finds no shape, cap or reference failure (the catalog aside)."""
    slots = f.slots
    last = ands(z3.Implies(f.n == i + 1, f.terminal[i]) for i in range(slots))
    only_last = ands(
        z3.Implies(z3.IntVal(i + 1) < f.n, z3.Not(f.terminal[i])) for i in range(slots)
    )
    shape = z3.And(f.n >= 1, f.n <= slots, last, only_last)
    body = f.n - 1
    limit = z3.If(cap < 0, 0, z3.If(cap < HARD_STEP_MAX, cap, HARD_STEP_MAX))
    if ablation == "cap-from-proposer":
        limit = z3.If(cap < 0, 0, cap)  # the proposer's or the entry's own cap, unclamped
    within = body <= limit
    refs = []
    for i in range(slots):
        for j in range(REF_SLOTS):
            t = f.target[i][j]
            ok = z3.And(_reference_ok(t, i + 1, ablation), z3.Not(f.is_terminal(t)))
            if ablation == "references-not-checked":
                ok = z3.BoolVal(True)
            refs.append(z3.Implies(z3.And(f.active(i), f.present[i][j]), ok))
    return z3.And(shape, within, ands(refs))


def batches_z3(f: SymFramework, name: str = "batch") -> tuple[z3.ArrayRef, z3.BoolRef]:
    """The batch number of each step (by 1-based step number), as `batches`
    groups them: an array and the equations that define it."""
    b = z3.Array(name, z3.IntSort(), z3.IntSort())
    defs = [b[1] == 0]
    for i in range(1, f.slots):
        reads_current = ors(
            z3.And(f.present[i][j], b[f.target[i][j]] == b[i]) for j in range(REF_SLOTS)
        )
        defs.append(b[i + 1] == z3.If(reads_current, b[i] + 1, b[i]))
    return b, ands(defs)


def _reference_ok(target: z3.ArithRef, step: z3.ArithRef | int, ablation: str | None) -> z3.BoolRef:
    """`validate`'s reference check for step number `step`: an earlier step."""
    if ablation == "references-not-checked":
        return z3.BoolVal(True)
    return z3.And(target >= 1, target < step)


def _references_claim(ablation: str | None) -> z3.BoolRef:
    """For frameworks of any length, by induction over the steps: step `i`
    (symbolic) with REF_SLOTS references; `batch` is any function that is
    non-decreasing on the steps before `i` (the induction hypothesis, which
    the second conjunct shows is kept) and whose value at `i` is `batches`'
    rule. Every reference the validator accepts reads an earlier batch."""
    batch = z3.Function("batch", z3.IntSort(), z3.IntSort())
    i = z3.Int("step")
    present = [z3.Bool(f"ref{j}") for j in range(REF_SLOTS)]
    target = [z3.Int(f"target{j}") for j in range(REF_SLOTS)]
    last = batch(i - 1)
    prefix = ands(z3.Implies(z3.And(t >= 1, t < i), batch(t) <= last) for t in target)
    reads_current = ors(z3.And(p, batch(t) == last) for p, t in zip(present, target, strict=True))
    rule = batch(i) == z3.If(reads_current, last + 1, last)
    reads_done = ands(
        z3.Implies(z3.And(p, _reference_ok(t, i, ablation)), z3.And(t < i, batch(t) < batch(i)))
        for p, t in zip(present, target, strict=True)
    )
    k = z3.Int("k")
    kept = z3.Implies(
        z3.And(k >= 1, k <= i, z3.Implies(k < i, batch(k) <= last)), batch(k) <= batch(i)
    )
    return z3.Implies(z3.And(i >= 2, prefix, rule), z3.And(reads_done, kept))


def _cap_claim(ablation: str | None) -> z3.BoolRef:
    f = SymFramework.fresh("fw.")
    current, stored = z3.Int("cap.current"), z3.Int("cap.stored")
    # Valid under whatever cap the entry was stored with, and re-validated now.
    reused = z3.And(framework_z3(f, stored, ablation), framework_z3(f, current, ablation))
    body = f.n - 1
    return z3.Implies(reused, z3.And(body <= HARD_STEP_MAX, z3.Or(current < 0, body <= current)))


# --- the turn (PLAN-4, PLAN-5, PLAN-6) ----------------------------------------------------------


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


# --- proofs -----------------------------------------------------------------------------------


@attrs.frozen
class PlanProperty:
    invariant: str
    title: str
    claim: Callable[[str | None], z3.BoolRef] | None  # None: the turn system's induction


PLAN_PROPERTIES: tuple[PlanProperty, ...] = (
    PlanProperty("PLAN-2", "references read completed earlier steps", _references_claim),
    PlanProperty("PLAN-4", "one recovery, never after a commit", None),
    PlanProperty("PLAN-5", "operational errors are not recovered", None),
    PlanProperty("PLAN-6", "resume never repeats a committed mutation", None),
    PlanProperty(
        "PLAN-7", "a cache hit has the current signatures", lambda a: _cache_claim("PLAN-7", a)
    ),
    PlanProperty("PLAN-8", "a cache hit is grounded", lambda a: _cache_claim("PLAN-8", a)),
    PlanProperty("PLAN-9", "an approval admits only its action", _consent_claim),
    PlanProperty("PLAN-12", "the cap is never raised", _cap_claim),
)
_BY_ID = {p.invariant: p for p in PLAN_PROPERTIES}


def _solve(formula: z3.BoolRef, timeout_s: float | None) -> tuple[z3.CheckSatResult, z3.Solver]:
    solver = timed(z3.Solver(), timeout_s)
    solver.add(formula)
    return solver.check(), solver


def _induction_queries(system: TurnSystem, inv: str) -> list[tuple[str, z3.BoolRef]]:
    """Init and step queries of the inductive invariant for `inv`: "not bad",
    strengthened by the lemmas for PLAN-6 (a resume that keeps the done state
    keeps "a pending slot never ran")."""

    def holds(s: TurnVars) -> z3.BoolRef:
        ok = z3.Not(system.bad(s, inv))
        return z3.And(system.lemmas(s), ok) if inv == "PLAN-6" else ok

    s0 = system.state("init")
    base = z3.And(system.init(s0), z3.Not(holds(s0)))
    s, p, t = system.state("pre"), system.params("step"), system.state("post")
    step = z3.And(holds(s), system.trans(s, p, t), z3.Not(holds(t)))
    return [
        (f"not {inv} holds initially", base),
        (f"not {inv} is kept by every step (1-induction)", step),
    ]


def prove_plan(
    inv: str,
    out_dir: Path | None = None,
    timeout_s: float | None = 120.0,
    ablation: str | None = None,
    prop_id: str | None = None,
) -> ProofResult:
    """Prove one PLAN property (or refute it under `ablation`)."""
    prop = _BY_ID[inv]
    start = time.perf_counter()
    queries: list[tuple[str, z3.BoolRef]]
    if prop.claim is not None:
        queries = [("negated claim", z3.Not(prop.claim(ablation)))]
    else:
        queries = _induction_queries(TurnSystem(ablation), inv)
    verdict, witness, detail = Verdict.PROVED, None, ""
    answers = []
    depth: int | None = None
    for label, formula in queries:
        r, solver = _solve(formula, timeout_s)
        answers.append("unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown")
        if r == z3.unknown:
            verdict, detail = Verdict.UNKNOWN, f"{label}: {solver.reason_unknown()}"
            break
        if r == z3.sat and prop.claim is not None:
            verdict, witness, detail = Verdict.REFUTED, str(solver.model()), f"{label}: sat"
            break
        if r == z3.sat:
            # Not inductive: only a real path from init refutes; else it is bounded.
            path = turn_bmc(TurnSystem(ablation), inv, BMC_DEPTH, timeout_s)
            if path is not None:
                verdict, depth = Verdict.REFUTED, len(path.acts)
                witness = ", ".join(f"{a.kind.value}({a.slot})" for a in path.acts)
                detail = f"a {depth}-step path from init reaches {inv}"
            else:
                verdict, depth = Verdict.BOUNDED, BMC_DEPTH
                detail = f"not inductive; no path of up to {BMC_DEPTH} steps reaches {inv}"
            break
    seconds = time.perf_counter() - start
    named = _Named(prop_id or inv, inv, prop.title)
    smt2 = None
    if out_dir is not None:
        qs: list[Query] = [
            smt2_query(f, label, a) for (label, f), a in zip(queries, answers, strict=False)
        ]
        smt2 = str(write_smt2(out_dir, named, qs))
    if verdict is Verdict.PROVED:
        detail = (
            "negated claim unsat"
            if prop.claim is not None
            else f"inductive over {SLOTS} step slots with the lemmas (k=1)"
        )
    return smt_result(
        named,
        verdict,
        depth,
        seconds,
        smt2,
        detail,
        witness=witness,
        k=1 if prop.claim is None and verdict is Verdict.PROVED else None,
        scope=_plan_scope(verdict, prop.claim is not None, depth),
    )


def _plan_scope(verdict: Verdict, claim: bool, depth: int | None) -> str:
    """A claim is over all inputs; the turn system has SLOTS step slots."""
    within = "all inputs" if claim else f"\u2264 {SLOTS} step slots"
    if verdict is Verdict.PROVED:
        return ALL_INPUTS if claim else f"proved for {within}"
    if verdict is Verdict.BOUNDED:
        return f"bounded to depth {depth} ({within})"
    if verdict is Verdict.REFUTED:
        return refuted_scope("an input breaks the claim" if claim else f"a {depth}-step path")
    return NO_CLAIM


@attrs.frozen
class _Named:
    id: str
    invariant: str
    title: str
