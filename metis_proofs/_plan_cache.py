"""The plan path's cache decision in z3 (PLAN-7, PLAN-8): `probe` as a formula.

`probe_z3` mirrors `metis_model.plan.probe` check by check over a `SymProbe`:
symbolic signatures (each an unbounded integer: equal or not is what
matters), the epoch, whether every executor is still present, grounding, the
path and the champion flag; the checks are keyed by `MissReason` and chained
in `MISS_ORDER`, so the miss reason is the first failing check (`MISS` and
`PATH` are `MissReason` and `PlanPath` as z3 enumerations). `_cache_claim`
is the spec, written without `probe_z3`: PLAN-7, a hit means equal
signatures and epoch; PLAN-8, a hit means grounded; both with the miss
reason being the first failing check. The ablations
`cache-ignores-signature` and `cache-ignores-grounding` weaken `probe_z3`.
Used by the PLAN-7 and PLAN-8 proofs (`_plan.prove_plan`) and the agreement
tests (`tests/plan/test_smt_agreement.py`).
"""

from __future__ import annotations

import attrs
import z3

from metis_model.plan import MISS_ORDER
from metis_trace import MissReason
from metis_trace import PlanPath

from ._sorts import ands
from ._sorts import finite_enum
from ._sorts import ors

__all__ = ["MISS", "PATH", "SymProbe", "probe_z3"]

MISS = finite_enum(MissReason)
PATH = finite_enum(PlanPath)


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
