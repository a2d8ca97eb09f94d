"""The spawn guard's ledger as a transition system (CHILD-4), pySMT style:
`init` / `trans` / `bad`.

In `GuardSystem` a step (`GuardParams`) is a spawn request (checked by
`guard_z3`, `_guard_mirror`; `admit` applied when admitted) or a child's end
(`finish`). The state (`GuardVars`): the limits (frozen, non-negative), the
total, the per-parent counts (an array from agent id to count, all 0
initially, read like `per_parent.get(id, 0)`), the number of running agents
and of known task keys (the sizes of the `running` and `tasks` sets: a step
adds or removes one element or none, which a step parameter says), and the
deepest depth spawned so far. `bad` is "some count exceeds its limit", read
for one arbitrary, frozen agent id (`watch`) for the per-parent counts, so
the queries stay quantifier-free and still cover every parent. In CHILD-4's
proof the invariant "every count within its limit" is closed by k-induction
(k = 1), and an ablation that lets a count past its limit is refuted by BMC
from the empty ledger (`_guard_induction`).
"""

from __future__ import annotations

import attrs
import z3

from metis_model._agents import GuardLimits

from ._guard_mirror import _ablation
from ._guard_mirror import guard_z3
from ._guard_sym import SymDecision
from ._guard_sym import SymGuard
from ._guard_sym import SymLimits

__all__ = ["GuardParams", "GuardSystem", "GuardVars"]


@attrs.frozen
class GuardVars:
    """One state of `GuardSystem`."""

    limits: SymLimits  # frozen
    watch: z3.ArithRef  # frozen: the agent id whose per-parent count `bad` reads
    total: z3.ArithRef
    per_parent: z3.ArrayRef  # agent id -> spawned by it (Int -> Int)
    running: z3.ArithRef  # len(state.running)
    tasks: z3.ArithRef  # len(state.tasks)
    deepest: z3.ArithRef  # the deepest agent so far (the root: 0)


@attrs.frozen
class GuardParams:
    """The label of one step: a spawn request (`spawn`) or a child's end."""

    spawn: z3.BoolRef
    parent: z3.ArithRef  # request.parent_id
    parent_depth: z3.ArithRef
    known_task: z3.BoolRef
    override: z3.BoolRef
    fresh: z3.BoolRef  # the new agent id is not running (else `admit` adds nothing)
    was_running: z3.BoolRef  # finish: the id was running (else `finish` is a no-op)


class GuardSystem:
    """The guard's ledger: `init` / `trans` / `bad` (see the module docstring)."""

    def __init__(self, ablation: str | None = None, limits: GuardLimits | None = None) -> None:
        """`limits`: fix the limits (else they are any non-negative integers)."""
        _ablation(ablation)
        self.ablation = ablation
        self.limits = limits

    def state(self, name: str) -> GuardVars:
        watch, total, running, tasks, deepest = (
            z3.Int(f"{name}.{n}") for n in ("watch", "total", "running", "tasks", "deepest")
        )
        return GuardVars(
            SymLimits.fresh(f"{name}.limit."),
            watch,
            total,
            z3.Array(f"{name}.per_parent", z3.IntSort(), z3.IntSort()),
            running,
            tasks,
            deepest,
        )

    def params(self, name: str) -> GuardParams:
        spawn, known, override, fresh, was_running = (
            z3.Bool(f"{name}.{n}")
            for n in ("spawn", "known_task", "override", "fresh", "was_running")
        )
        return GuardParams(
            spawn,
            z3.Int(f"{name}.parent"),
            z3.Int(f"{name}.parent_depth"),
            known,
            override,
            fresh,
            was_running,
        )

    def init(self, s: GuardVars) -> z3.BoolRef:
        """`GuardState(limits)`: nothing spawned, only the root (depth 0).

        "Every agent has spawned 0" is asserted where counts are read: here
        for `watch`, and by the unrolling for each step's parent (see
        `starts_at_zero`). No other entry is ever read, so this is exact on
        every path, and it keeps the queries free of quantifiers and of
        constant arrays (which cvc5 reads only with an experimental option).
        """
        fixed: list[z3.BoolRef] = []
        if self.limits is not None:
            given = SymLimits.of(self.limits).values()
            fixed = [a == b for a, b in zip(s.limits.values(), given, strict=True)]
        return z3.And(
            s.limits.non_negative(),
            *fixed,
            s.total == 0,
            s.per_parent[s.watch] == 0,
            s.running == 0,
            s.tasks == 0,
            s.deepest == 0,
        )

    def starts_at_zero(self, s0: GuardVars, p: GuardParams) -> z3.BoolRef:
        """The initial count of a step's parent (the rest of `init`)."""
        return s0.per_parent[p.parent] == 0

    def request(self, s: GuardVars, p: GuardParams) -> SymGuard:
        return SymGuard(
            s.limits,
            p.parent_depth,
            s.total,
            s.per_parent[p.parent],
            s.running,
            p.known_task,
            p.override,
        )

    def decision(self, s: GuardVars, p: GuardParams) -> SymDecision:
        return guard_z3(self.request(s, p), self.ablation)

    def trans(self, s: GuardVars, p: GuardParams, t: GuardVars) -> z3.BoolRef:
        frozen = z3.And(
            *[a == b for a, b in zip(s.limits.values(), t.limits.values(), strict=True)],
            s.watch == t.watch,
        )
        unchanged = z3.And(
            t.total == s.total,
            t.per_parent == s.per_parent,
            t.tasks == s.tasks,
            t.deepest == s.deepest,
        )
        d = self.decision(s, p)
        child = p.parent_depth + 1
        admitted = z3.And(
            t.total == s.total + 1,
            t.per_parent == z3.Store(s.per_parent, p.parent, s.per_parent[p.parent] + 1),
            t.running == s.running + z3.If(p.fresh, 1, 0),
            t.tasks == s.tasks + z3.If(p.known_task, 0, 1),
            t.deepest == z3.If(child > s.deepest, child, s.deepest),
        )
        spawn = z3.And(
            # a set can hold the new id (or the known key) only if it is not empty
            z3.Implies(z3.Not(p.fresh), s.running >= 1),
            z3.Implies(p.known_task, s.tasks >= 1),
            z3.If(d.admitted, admitted, z3.And(unchanged, t.running == s.running)),
        )
        finish = z3.And(
            z3.Implies(p.was_running, s.running >= 1),
            unchanged,
            t.running == s.running - z3.If(p.was_running, 1, 0),
        )
        return z3.And(frozen, z3.If(p.spawn, spawn, finish))

    def plausible(self, s: GuardVars, p: GuardParams) -> tuple[z3.BoolRef, ...]:
        """Only to shape counterexamples (the proofs allow any request, as the
        guard does): the parent is an agent of the tree so far; the new
        agent's id is new; the parent's depth is one the tree has."""
        return tuple(
            z3.Implies(p.spawn, c)
            for c in (
                z3.And(p.parent >= 0, p.parent <= s.total),
                p.fresh,
                z3.And(p.parent_depth >= 0, p.parent_depth <= s.deepest),
            )
        )

    def bad(self, s: GuardVars) -> z3.BoolRef:
        """Some count exceeds its limit."""
        lim = s.limits
        return z3.Or(
            s.deepest > lim.max_depth,
            s.total > lim.max_total,
            s.per_parent[s.watch] > lim.max_per_parent,
            s.running > lim.max_concurrent,
        )
