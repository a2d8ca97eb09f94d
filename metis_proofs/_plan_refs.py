"""The plan path's references and step cap in z3 (PLAN-2, PLAN-12).

`framework_z3` mirrors the shape, cap and reference checks of `validate`
(the catalog aside) and `batches_z3` the batching of `batches`, over a
`SymFramework`: up to `STEP_SLOTS` (`HARD_STEP_MAX + 2`) steps with
`REF_SLOTS` (two) reference slots each. `_references_claim` is PLAN-2: in a
valid framework every reference reads a step of an earlier batch (completed
before its reader's batch starts), for frameworks of any length, by
induction over the steps. `_cap_claim` is PLAN-12: a valid framework has at
most `min(cap, 16)` steps for every integer cap, so a cached entry validated
under any other cap cannot raise it. The ablations `references-not-checked`
and `cap-from-proposer` weaken the validator. Used by the PLAN-2 and
PLAN-12 proofs (`_plan.prove_plan`), their counterexamples (`_plan_cex`)
and the agreement tests (`tests/plan/test_smt_agreement.py`).
"""

from __future__ import annotations

import attrs
import z3

from metis_trace import HARD_STEP_MAX

from ._sorts import ands
from ._sorts import ors

__all__ = ["REF_SLOTS", "STEP_SLOTS", "SymFramework", "batches_z3", "framework_z3"]

STEP_SLOTS = HARD_STEP_MAX + 2
REF_SLOTS = 2


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
