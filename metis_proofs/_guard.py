"""The spawn guard (CHILD-4) in z3: its decision function and its counts.

CHILD-4's proof (`check_guard`, `prove_spawn_guard`) over two encodings of
`metis_model._agents`, both built from its own names (`RefusalCode`,
`GUARD_ORDER`, `GuardLimits`, `GuardState`, `SpawnRequest`). One module a
piece:

* `_guard_sym`: one guard input and one decision as z3 terms (`SymGuard`,
  `SymDecision`, `CODE`).
* `_guard_mirror`: `guard_z3`, `guard_decision` check by check, and its
  weakened versions (`GUARD_ABLATIONS`).
* `_guard_claim`: `guard_claim`, the spec stated without the encoding.
* `_guard_system`: `GuardSystem`, the ledger as a transition system.
* `_guard_induction`: k-induction on the ledger, then BMC.
* `_guard_decode`: counterexamples in the Python model's types.

The proof has two halves. (1) The decision function: the negated claim is
unsat, for every integer value of every limit and count. (2) The ledger:
the invariant "every count within its limit" is closed by k-induction
(k = 1). Each ablation must be refuted: by the claim (a concrete guard state
and request, decoded to the Python model's own types) and, when it lets a
count past its limit, by BMC on the system (the shortest sequence of spawns
and ends from the empty ledger).
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import z3

from metis_model._agents import GuardLimits
from metis_model._agents import GuardState
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest

from ._guard_claim import guard_claim
from ._guard_decode import GuardPathStep
from ._guard_decode import _describe_input
from ._guard_decode import _describe_path
from ._guard_decode import decode_guard
from ._guard_induction import BMC_DEPTH
from ._guard_induction import _answer
from ._guard_induction import _induction
from ._guard_mirror import concrete_decision
from ._guard_mirror import guard_z3
from ._guard_sym import SymGuard
from ._guard_system import GuardSystem
from ._results import NO_CLAIM
from ._results import Named
from ._results import ProofResult
from ._results import Verdict
from ._results import refuted_scope
from ._results import smt_result
from ._smt2 import Query
from ._smt2 import smt2_query
from ._smt2 import write_smt2
from ._sorts import timed

__all__ = ["GuardProof", "check_guard", "prove_spawn_guard"]


@attrs.frozen
class GuardProof:
    """Both halves of CHILD-4's proof, three-valued each ("unsat" proved,
    "sat" refuted, "unknown" a timeout)."""

    claim: str
    claim_witness: tuple[GuardState, SpawnRequest, RefusalCode | None] | None
    system: str  # "proved" | "refuted" | "bounded" | "unknown"
    k: int | None  # the k that closed the induction
    depth: int | None  # BMC depth reached (refuted: the path's length)
    path: tuple[GuardPathStep, ...] | None
    queries: tuple[Query, ...]
    seconds: float


def _domain(g: SymGuard) -> z3.BoolRef:
    counts = (g.parent_depth, g.total, g.children, g.running)
    return z3.And(g.limits.non_negative(), *[c >= 0 for c in counts])


def check_guard(
    ablation: str | None = None,
    *,
    timeout_s: float | None = 120.0,
    bmc_depth: int = BMC_DEPTH,
    limits: GuardLimits | None = None,
) -> GuardProof:
    """Prove (or refute) the claim and the invariant of the ledger (`limits`:
    fixed limits for the ledger; the claim is always for all limits)."""
    start = time.perf_counter()
    queries: list[Query] = []
    # (1) The decision function: the negated claim.
    g = SymGuard.fresh("g.")
    d = guard_z3(g, ablation)
    negated = z3.Not(guard_claim(g, d))
    solver = timed(z3.SimpleSolver(), timeout_s)
    solver.add(negated)
    r = solver.check()
    claim = _answer(r)
    queries.append(smt2_query(negated, "the negated guard claim (order and limits)", claim))
    witness = None
    if r == z3.sat:
        # A witness the Python model can hold: no negative limit, count or depth.
        if solver.check(_domain(g)) != z3.sat:  # pragma: no cover - every ablation has one
            solver.check()
        state, request = decode_guard(solver.model(), g)
        witness = (state, request, concrete_decision(state, request, ablation))
    # (2) The ledger: k-induction, then BMC.
    system = GuardSystem(ablation, limits)
    verdict, k, depth, path = _induction(system, queries, timeout_s, bmc_depth)
    return GuardProof(
        claim, witness, verdict, k, depth, path, tuple(queries), time.perf_counter() - start
    )


def prove_spawn_guard(
    prop: Named,
    out_dir: Path | None,
    timeout_s: float | None = 120.0,
    ablation: str | None = None,
) -> ProofResult:
    """CHILD-4 as a `ProofResult`: proved only when the claim is unsat and the
    ledger's invariant closes by induction; refuted if either is refuted."""
    proof = check_guard(ablation, timeout_s=timeout_s)
    smt2 = str(write_smt2(out_dir, prop, proof.queries)) if out_dir is not None else None
    said = {"unsat": "proved", "sat": "refuted", "unknown": "unknown"}
    part = f"guard claim {said[proof.claim]}; ledger {proof.system}"
    if proof.claim == "sat" or proof.system == "refuted":
        witnesses = []
        if proof.claim_witness is not None:
            witnesses.append(f"guard input: {_describe_input(*proof.claim_witness)}")
        if proof.path is not None:
            witnesses.append(f"ledger path: {_describe_path(proof.path)}")
        at = f" by a {proof.depth}-step path" if proof.path is not None else ""
        return smt_result(
            prop,
            Verdict.REFUTED,
            proof.depth,
            proof.seconds,
            smt2,
            part + at,
            witness="; ".join(witnesses) or None,
            scope=refuted_scope("a guard input or a ledger path breaks it"),
        )
    if proof.claim == "unsat" and proof.system == "proved":
        return smt_result(
            prop,
            Verdict.PROVED,
            None,
            proof.seconds,
            smt2,
            "negated guard claim unsat (unbounded limits and counts); "
            f"ledger within limits, {proof.k}-inductive over spawn/finish",
            k=proof.k,
            scope="proved for all limits, counts and runs of the ledger",
        )
    if proof.claim == "unsat" and proof.system == "bounded":  # pragma: no cover
        return smt_result(
            prop,
            Verdict.BOUNDED,
            proof.depth,
            proof.seconds,
            smt2,
            f"negated guard claim unsat; ledger BMC clean to depth {proof.depth}, not inductive",
            scope=f"bounded to depth {proof.depth} (the ledger)",
        )
    return smt_result(
        prop,
        Verdict.UNKNOWN,
        proof.depth,
        proof.seconds,
        smt2,
        f"{part} (a solver timeout: no claim)",
        scope=NO_CLAIM,
    )
