"""The plan path in z3: cache validity, consent binding, references, the turn.

The PLAN proofs (`PLAN_PROPERTIES`, `prove_plan`) over one encoding of
`metis_model.plan`, built from its enums (`MissReason`, `PlanPath`,
`SlotStatus`, `TurnPhase`, `Failure`, `Outcome`, `ActKind`) and tested to
agree with the Python model on concrete states
(`tests/plan/test_smt_agreement.py`). One module a piece:

* `_plan_cache`: `probe_z3` mirrors `probe` check by check over symbolic
  signatures (each an unbounded integer: equal or not is what matters), the
  epoch, whether every executor is still present, grounding, the path and
  the champion flag. PLAN-7: a hit means equal signatures and epoch; PLAN-8:
  a hit means grounded; both with the miss reason being the first failing
  check.
* `_plan_consent`: `authorizes_z3` mirrors `authorizes` over the six binding
  fields of an approval and an action (integers) and whether it was used.
  PLAN-9: an approval admits only an equal action, once; an approval
  granted in another turn admits nothing in this one.
* `_plan_refs`: `framework_z3` mirrors the shape, cap and reference checks
  of `validate` and `batches_z3` the batching of `batches` over frameworks
  of up to `HARD_STEP_MAX + 2` steps with two reference slots each. PLAN-2:
  in a valid framework every reference reads a step of an earlier batch
  (completed before its reader's batch starts); PLAN-12: a valid framework
  has at most `min(cap, 16)` steps for every integer cap, so a cached entry
  validated under any other cap cannot raise it.
* `_plan_turn`: `TurnSystem` is `_exec`'s protocol as a transition system
  (pySMT style: `init` / `trans` / `bad`) over three step slots, in the
  vocabulary of `_plan_turn_sym`. PLAN-4, PLAN-5, PLAN-6 hold by an
  inductive invariant (1-induction: the lemmas plus "not bad" hold
  initially and are kept by every step); `_plan_turn_bmc` decodes its
  states and searches it by BMC when induction does not close.

Ablations (`PLAN_ABLATIONS`) weaken one decision each; each must be refuted,
with a minimal counterexample turn log (`find_plan_counterexample`,
`_plan_cex`) that `check_turn_log` rejects with the ablation's ID.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import attrs
import z3

from metis_model.plan._exec import EXEC_ABLATIONS

from ._plan_cache import _cache_claim
from ._plan_consent import _consent_claim
from ._plan_refs import _cap_claim
from ._plan_refs import _references_claim
from ._plan_turn import SLOTS
from ._plan_turn import TurnSystem
from ._plan_turn_bmc import turn_bmc
from ._plan_turn_sym import TurnVars
from ._results import ALL_INPUTS
from ._results import NO_CLAIM
from ._results import ProofResult
from ._results import Verdict
from ._results import refuted_scope
from ._results import smt_result
from ._smt2 import Query
from ._smt2 import smt2_query
from ._smt2 import write_smt2
from ._sorts import timed

__all__ = ["PLAN_ABLATIONS", "PLAN_PROPERTIES", "PlanProperty", "prove_plan"]

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
BMC_DEPTH = 10  # the turn system's search when induction does not close


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
