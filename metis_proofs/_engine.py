"""Bounded model checking, Houdini and k-induction over a `LoopSystem`.

BMC deepens one unrolling in one solver: the transition of step k is asserted
once, and "bad at depth k" is asked through an assumption literal
(`solver.check(bad_k)`), so nothing learned at depth k is thrown away at k+1
and nothing is pushed or popped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Sequence

import attrs
import z3

from ._sorts import ands
from ._sorts import ors
from ._sorts import timed
from ._system import LoopSystem
from ._system_fields import CHECK
from ._system_fields import OK
from ._system_terms import Params
from ._system_terms import State


class Unrolling:
    """States s0..sk and labels p0..p(k-1) of one path, asserted into a solver."""

    def __init__(self, system: LoopSystem, solver: z3.Solver, prefix: str = "", init: bool = True):
        self.system = system
        self.solver = solver
        self.prefix = prefix
        self.states: list[State] = [system.state(f"{prefix}0")]
        self.params: list[Params] = []
        if init:
            solver.add(system.init(self.states[0]))

    @property
    def depth(self) -> int:
        return len(self.params)

    def extend(self) -> State:
        k = len(self.params)
        p = self.system.params(f"{self.prefix}{k}")
        t = self.system.state(f"{self.prefix}{k + 1}")
        self.solver.add(self.system.trans(self.states[-1], p, t))
        self.params.append(p)
        self.states.append(t)
        return t


@attrs.frozen
class BmcOutcome:
    """What iterative deepening found for a set of target IDs.

    `found` maps an ID to (depth, model, unrolling) of its shortest violation;
    `clean_depth` is the deepest k at which no remaining target was reachable
    at any depth <= k; `unknown_at` is the depth whose check timed out, if any.
    """

    found: dict[str, tuple[int, z3.ModelRef]]
    clean_depth: int
    unknown_at: int | None
    seconds: float
    depth_seconds: tuple[float, ...]
    unrolling: Unrolling


def bmc(
    system: LoopSystem,
    targets: Sequence[str] | None,
    max_depth: int,
    *,
    timeout_s: float | None = None,
    budget_s: float | None = None,
    stop_at_first: bool = False,
    on_depth: Callable[[int], None] | None = None,
    invariant: Invariant | None = None,
) -> BmcOutcome:
    """Iterative deepening from depth 1 to `max_depth`.

    `targets=None` means every ID. Each depth is asked once per newly found
    violation (to separate IDs), always through assumption literals. A proved
    `invariant` (Houdini's) is asserted in every state: it removes no
    reachable state, and it prunes the search (about 2x faster at depth 20).
    """
    start = time.perf_counter()
    solver = timed(z3.SimpleSolver(), timeout_s)
    path = Unrolling(system, solver)
    remaining = set(targets) if targets is not None else None
    found: dict[str, tuple[int, z3.ModelRef]] = {}
    clean = 0
    unknown_at: int | None = None
    times: list[float] = []
    for k in range(1, max_depth + 1):
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
        t0 = time.perf_counter()
        s = path.extend()
        if invariant is not None:
            solver.add(invariant.holds(system, s))
        while True:
            viol = s["viol"]
            if remaining is None:
                want = z3.And(viol != CHECK[OK], *[viol != CHECK[i] for i in found])
            else:
                if not remaining:
                    break
                want = ors([viol == CHECK[i] for i in sorted(remaining)])
            lit = z3.Bool(f"bad@{k}.{len(found)}")
            solver.add(z3.Implies(lit, want))
            r = solver.check(lit)
            if r == z3.unsat:
                break
            if r == z3.unknown:
                unknown_at = k
                break
            model = solver.model()
            inv = CHECK.decode(model.eval(viol, model_completion=True))
            found[inv] = (k, model)
            if remaining is not None:
                remaining.discard(inv)
            if stop_at_first:
                break
        times.append(time.perf_counter() - t0)
        if on_depth is not None:
            on_depth(k)
        if unknown_at is not None or (stop_at_first and found):
            break
        clean = k
        if remaining is not None and not remaining:
            break
    return BmcOutcome(found, clean, unknown_at, time.perf_counter() - start, tuple(times), path)


@attrs.frozen
class Invariant:
    """A conjunction of lemmas proved inductive (Houdini's fixpoint)."""

    names: tuple[str, ...]
    dropped: tuple[str, ...]
    seconds: float

    def holds(self, system: LoopSystem, s: State) -> z3.BoolRef:
        wanted = set(self.names)
        return ands([body for name, body in system.lemmas(s) if name in wanted])


def _drop_false(
    cands: dict[str, z3.BoolRef], read: dict[str, z3.BoolRef], m: z3.ModelRef, dropped: list[str]
) -> None:
    """Move to `dropped` every candidate whose `read` term is false in `m`."""
    for name in [n for n in cands if z3.is_false(m.eval(read[n], model_completion=True))]:
        del cands[name]
        dropped.append(name)


def houdini(system: LoopSystem, timeout_s: float | None = None) -> Invariant | None:
    """The largest inductive subset of `system.lemmas` (None on a timeout).

    Drop every candidate false in an initial state, then repeatedly every
    candidate that some step from a state satisfying all survivors breaks.
    """
    start = time.perf_counter()
    s = system.state("h0")
    p = system.params("h0")
    t = system.state("h1")
    cands = dict(system.lemmas(s))
    after = dict(system.lemmas(t))
    dropped: list[str] = []
    init = timed(z3.SimpleSolver(), timeout_s)
    init.add(system.init(s))
    while True:
        lit = z3.Bool(f"houdini-init-{len(dropped)}")
        init.add(z3.Implies(lit, ors([z3.Not(cands[n]) for n in cands])))
        r = init.check(lit)
        if r == z3.unknown:
            return None
        if r == z3.unsat:
            break
        _drop_false(cands, cands, init.model(), dropped)
    step = timed(z3.SimpleSolver(), timeout_s)
    step.add(system.trans(s, p, t))
    guards = {n: z3.Bool(f"houdini-keep-{n}") for n in cands}
    for n, g in guards.items():
        step.add(z3.Implies(g, cands[n]))
    rounds = 0
    while cands:
        rounds += 1
        lit = z3.Bool(f"houdini-step-{rounds}")
        step.add(z3.Implies(lit, ors([z3.Not(after[n]) for n in cands])))
        r = step.check(lit, *[guards[n] for n in cands])
        if r == z3.unknown:
            return None
        if r == z3.unsat:
            break
        _drop_false(cands, after, step.model(), dropped)
    return Invariant(tuple(cands), tuple(dropped), time.perf_counter() - start)


@attrs.frozen
class InductionOutcome:
    proved: bool
    k: int  # the k that closed the proof, or the largest tried
    unknown: bool
    seconds: float


class Induction:
    """The step case of k-induction, shared by every property of a system.

    One path of states from *any* state satisfying a proved invariant; for
    "`viol` never becomes X", ask whether the last of k+1 states can violate
    X while the first k do not (those are assumptions, so every property
    reuses the same unrolling). Unsat means X holds at every depth, given the
    base case (BMC to depth >= k-1).
    """

    def __init__(
        self, system: LoopSystem, invariant: Invariant, timeout_s: float | None = None
    ) -> None:
        self.system = system
        self.invariant = invariant
        self.solver = timed(z3.SimpleSolver(), timeout_s)
        self.path = Unrolling(system, self.solver, prefix="ind.", init=False)
        first = invariant.holds(system, self.path.states[0])
        self.solver.add(first)
        self.steps: list[z3.BoolRef] = [first]  # what step i adds, for the SMT-LIB file

    def _extend_to(self, k: int) -> None:
        while self.path.depth < k:
            before = len(self.solver.assertions())
            s = self.path.extend()
            self.solver.add(self.invariant.holds(self.system, s))
            self.steps.append(z3.And(*self.solver.assertions()[before:]))

    def query(self, inv_id: str, k: int) -> z3.BoolRef:
        """The formula that is unsat iff the k-step case holds for `inv_id`."""
        self._extend_to(k)
        states = self.path.states
        keep = [states[i]["viol"] != CHECK[inv_id] for i in range(k)]
        return z3.And(*self.steps[: k + 1], *keep, self.system.bad(states[k], inv_id))

    def check(self, inv_id: str, max_k: int) -> InductionOutcome:
        start = time.perf_counter()
        for k in range(1, max_k + 1):
            self._extend_to(k)
            states = self.path.states
            wanted = [states[i]["viol"] != CHECK[inv_id] for i in range(k)]
            r = self.solver.check(*wanted, self.system.bad(states[k], inv_id))
            if r == z3.unsat:
                return InductionOutcome(True, k, False, time.perf_counter() - start)
            if r == z3.unknown:
                return InductionOutcome(False, k, True, time.perf_counter() - start)
        return InductionOutcome(False, max_k, False, time.perf_counter() - start)


def k_induction(
    system: LoopSystem,
    inv_id: str,
    invariant: Invariant,
    max_k: int,
    timeout_s: float | None = None,
) -> InductionOutcome:
    """k-induction for one property (see `Induction` to share the work)."""
    return Induction(system, invariant, timeout_s).check(inv_id, max_k)
