"""The ledger's half of CHILD-4's proof: k-induction on `GuardSystem`, then BMC.

`_induction` tries k = 1..`MAX_K` (the base case on one unrolling from
`init`, the step on one unrolling from any state that is not bad) and, when
induction does not close, searches by BMC up to `bmc_depth` steps. It says
"proved" (with the k), "refuted" (with the shortest path from the empty
ledger that breaks a limit, decoded by `_guard_decode.decode_path`),
"bounded" or "unknown" (a timeout), and adds the queries it settled to the
evidence (`_write_induction`: the base case and the step). Called by
`_guard.check_guard`, which reads the claim's answer with the same `_answer`.
"""

from __future__ import annotations

from collections.abc import Sequence

import z3

from ._guard_decode import GuardPathStep
from ._guard_decode import decode_path
from ._guard_system import GuardParams
from ._guard_system import GuardSystem
from ._guard_system import GuardVars
from ._smt2 import Query
from ._smt2 import smt2_query
from ._sorts import ands
from ._sorts import ors
from ._sorts import timed

__all__ = ["BMC_DEPTH", "MAX_K"]

MAX_K = 3  # k-induction is tried for k = 1..MAX_K before falling back to BMC
BMC_DEPTH = 12  # BMC depth when induction does not close (ablations: the search)


def _answer(r: z3.CheckSatResult) -> str:
    return "unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown"


def _induction(
    system: GuardSystem, queries: list[Query], timeout_s: float | None, bmc_depth: int
) -> tuple[str, int | None, int | None, tuple[GuardPathStep, ...] | None]:
    # One BMC unrolling from init; "bad at depth j" through an assumption.
    base = timed(z3.SimpleSolver(), timeout_s)
    states = [system.state("bmc.0")]
    params: list[GuardParams] = []
    base.add(system.init(states[0]))
    # One induction unrolling from any state; "not bad" on all but the last.
    step = timed(z3.SimpleSolver(), timeout_s)
    ind = [system.state("ind.0")]
    ind_params: list[GuardParams] = []

    def base_at(j: int) -> str:
        while len(states) <= j:
            p = system.params(f"bmc.{len(params)}")
            t = system.state(f"bmc.{len(states)}")
            base.add(system.trans(states[-1], p, t), system.starts_at_zero(states[0], p))
            params.append(p)
            states.append(t)
        return _answer(base.check(system.bad(states[j])))

    def path_to(j: int) -> tuple[GuardPathStep, ...]:
        queries.append(
            smt2_query(
                z3.And(*base.assertions(), system.bad(states[j])),
                f"a path of {j} steps from init breaking a limit",
                "sat",
            )
        )
        # Prefer a path a runtime could take (parents of the tree, new ids,
        # real depths), dropping those wishes from the last while none exists.
        steps = [system.plausible(s, p) for s, p in zip(states, params, strict=False)]
        wishes = [z3.Bool(f"plausible@{j}.{w}") for w in range(3)]
        for w, lit in enumerate(wishes):
            base.add(z3.Implies(lit, ands(step[w] for step in steps)))
        for n in range(len(wishes), -1, -1):
            if base.check(system.bad(states[j]), *wishes[:n]) == z3.sat:
                return tuple(decode_path(base.model(), system, states[: j + 1], params[:j]))
        return ()  # pragma: no cover - a timeout re-asking a satisfiable query

    for k in range(1, MAX_K + 1):
        answer = base_at(k - 1)
        if answer == "sat":
            return "refuted", None, k - 1, path_to(k - 1)
        if answer == "unknown":
            return "unknown", None, (k - 2 if k > 1 else None), None
        while len(ind_params) < k:
            p = system.params(f"ind.{len(ind_params)}")
            t = system.state(f"ind.{len(ind)}")
            step.add(z3.Not(system.bad(ind[-1])), system.trans(ind[-1], p, t))
            ind_params.append(p)
            ind.append(t)
        answer = _answer(step.check(system.bad(ind[k])))
        if answer == "unsat":
            _write_induction(system, queries, k, states, step, ind)
            return "proved", k, None, None
        if answer == "unknown":
            return "unknown", None, k - 1, None
    for j in range(MAX_K, bmc_depth + 1):
        answer = base_at(j)
        if answer == "sat":
            return "refuted", None, j, path_to(j)
        if answer == "unknown":
            return "unknown", None, j - 1, None
    bad_any = ors(system.bad(s) for s in states[: bmc_depth + 1])
    queries.append(
        smt2_query(
            z3.And(*base.assertions(), bad_any),
            f"paths of 0..{bmc_depth} steps from init breaking a limit",
            "unsat",
        )
    )
    return "bounded", None, bmc_depth, None


def _write_induction(
    system: GuardSystem,
    queries: list[Query],
    k: int,
    states: Sequence[GuardVars],
    step: z3.Solver,
    ind: Sequence[GuardVars],
) -> None:
    s0 = system.state("init")
    if k == 1:
        base_q = z3.And(system.init(s0), system.bad(s0))
        queries.append(smt2_query(base_q, "base case: the empty ledger is within limits", "unsat"))
    else:  # pragma: no cover - the ledger closes at k = 1
        b = z3.SimpleSolver()
        b.add(system.init(states[0]))
        for j in range(k - 1):
            p = system.params(f"base.{j}")
            b.add(system.trans(states[j], p, states[j + 1]), system.starts_at_zero(states[0], p))
        queries.append(
            smt2_query(
                z3.And(*b.assertions(), ors(system.bad(s) for s in states[:k])),
                f"base case: no limit broken within {k - 1} steps",
                "unsat",
            )
        )
    queries.append(
        smt2_query(
            z3.And(*step.assertions(), system.bad(ind[k])),
            f"{k}-induction step: within limits stays within limits",
            "unsat",
        )
    )
