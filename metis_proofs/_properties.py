"""Every proved property, by ID, and how it is proved.

The proof logic lives here so that the CLI works from an installed package;
`metis prove` runs every entry of `PROPERTIES` (`_property_table.py`) and
writes its SMT-LIB2 file.

* PERM-x and CHILD-2 are claims about `resolve_z3` / `settle_z3` /
  `child_mode_z3` over symbolic facts (`_perm_claims.py`): the negated claim
  is unsat, so the claim holds for every input (`proved`).
* CHILD-4 (`_guard.py`, its pieces `_guard_*.py`): the spawn guard's claim
  over unbounded limits and counts (validity), and its ledger's counts within
  limits (1-induction over spawn and child-end steps); `proved` only when both
  close.
* PLAN-x (`_plan.py`; the encodings in `_plan_*.py`): the cache decision,
  consent binding, references and the cap as validity claims; PLAN-4/5/6 as
  an inductive invariant of the turn system (1-induction).
* Loop properties ("the checker never reports X") go through one shared BMC
  run (iterative deepening with assumption literals) and one Houdini
  invariant, then k-induction per ID (`_loop_session.py`): `proved` when
  induction closes, else `bounded(depth)`; a solver timeout is `unknown`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import z3

from ._guard import prove_spawn_guard
from ._loop_session import LoopSession
from ._perm_claims import PERM_CLAIMS
from ._perm_claims import PERM_RULE_SLOTS
from ._plan import PLAN_PROPERTIES
from ._plan import prove_plan
from ._property_table import DEFAULT_DEPTH
from ._property_table import DEFAULT_TIMEOUT_S
from ._property_table import PROPERTIES
from ._property_table import Property
from ._property_table import get_property
from ._results import ALL_INPUTS
from ._results import NO_CLAIM
from ._results import ProofResult
from ._results import Verdict
from ._results import refuted_scope
from ._results import smt_result
from ._smt2 import smt2_query
from ._smt2 import write_smt2
from ._sorts import timed
from ._system_config import LoopConfig

__all__ = ["GUARD_CLAIMS", "PLAN_CLAIMS", "prove", "prove_all", "prove_claim"]


# Claims with their own prover: CHILD-4, the spawn guard's decision function
# (validity) and its ledger's counts (1-induction over spawn/finish).
GUARD_CLAIMS = frozenset({"CHILD-4"})
# The plan path's claims and its turn system's induction (`_plan.py`).
PLAN_CLAIMS = frozenset(p.invariant for p in PLAN_PROPERTIES)


def prove_claim(
    prop: Property,
    out_dir: Path | None,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    config: LoopConfig | None = None,
) -> ProofResult:
    """Unsat of the negated claim = proved for every input."""
    if prop.id in GUARD_CLAIMS:  # the claim plus the ledger's induction (`_guard.py`)
        return prove_spawn_guard(prop, out_dir, timeout_s)
    if prop.id in PLAN_CLAIMS:
        return prove_plan(prop.invariant, out_dir, timeout_s, prop_id=prop.id)
    start = time.perf_counter()
    negated = z3.Not(PERM_CLAIMS[prop.id](config or LoopConfig()))
    solver = timed(z3.Solver(), timeout_s)
    solver.add(negated)
    r = solver.check()
    seconds = time.perf_counter() - start
    smt2 = None
    if out_dir is not None:
        expect = "unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown"
        smt2 = str(write_smt2(out_dir, prop, [smt2_query(negated, "negated claim", expect)]))
    if r == z3.unsat:
        return smt_result(
            prop,
            Verdict.PROVED,
            None,
            seconds,
            smt2,
            f"negated claim unsat ({PERM_RULE_SLOTS} rule slots)",
            scope=f"{ALL_INPUTS} (\u2264 {PERM_RULE_SLOTS} rules per decision)",
        )
    if r == z3.sat:
        return smt_result(
            prop,
            Verdict.REFUTED,
            None,
            seconds,
            smt2,
            "negated claim sat",
            witness=str(solver.model()),
            scope=refuted_scope("an input breaks the claim"),
        )
    return smt_result(
        prop,
        Verdict.UNKNOWN,
        None,
        seconds,
        smt2,
        f"solver: {solver.reason_unknown()}",
        scope=NO_CLAIM,
    )


def prove(
    prop_id: str,
    out_dir: Path | None = None,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    session: LoopSession | None = None,
    config: LoopConfig | None = None,
) -> ProofResult:
    """Prove one property (sharing `session` across loop properties, if given)."""
    prop = get_property(prop_id)
    if prop.method == "smt":
        return prove_claim(prop, out_dir, timeout_s, session.system.config if session else config)
    session = session or LoopSession(config, depth, timeout_s)
    return session.prove(prop, out_dir)


def prove_all(
    out_dir: Path | None = None,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    config: LoopConfig | None = None,
    on_result: Callable[[ProofResult], None] | None = None,
    on_depth: Callable[[int], None] | None = None,
    session: LoopSession | None = None,
) -> list[ProofResult]:
    """Every property; pass `session` to read its `shared_seconds` afterwards."""
    session = session or LoopSession(config, depth, timeout_s, on_depth)
    results = []
    for prop in PROPERTIES:
        result = prove(prop.id, out_dir, depth=depth, timeout_s=timeout_s, session=session)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
