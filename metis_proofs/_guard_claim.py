"""The spawn guard's claim (CHILD-4): the spec, stated without the encoding.

`guard_claim(g, d)` says of a decision `d` on the input `g`: the guard
admits exactly when admitting exceeds no limit and is no unforced duplicate;
otherwise its code is the *first* check of `GUARD_ORDER` (depth, total,
per-parent, concurrency, duplicate) whose limit admitting would exceed; and
after an admitted spawn (`admit`) the child's depth, the total, the parent's
count and the running count are all within their limits. It reads the
counts `admit` leaves, not the checks of `_guard_mirror`, so the encoding is
judged by the spec and not by itself. CHILD-4's proof (`_guard.check_guard`)
proves it as a validity query: `Not(guard_claim(g, guard_z3(g)))` is unsat,
for every integer value of every limit and count.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import z3

from metis_model._agents import GUARD_ORDER
from metis_model._agents import RefusalCode

from ._guard_sym import CODE
from ._guard_sym import SymDecision
from ._guard_sym import SymGuard
from ._guard_sym import SymLimits
from ._sorts import ors

__all__ = ["guard_claim"]


@attrs.frozen
class _After:
    """The counts `admit` leaves: the child's depth, the total, the parent's
    count, the running count (`fresh`: the agent id was not running)."""

    depth: z3.ArithRef
    total: z3.ArithRef
    children: z3.ArithRef
    running: z3.ArithRef


def _after(g: SymGuard, fresh: z3.BoolRef | bool) -> _After:
    return _After(g.parent_depth + 1, g.total + 1, g.children + 1, g.running + z3.If(fresh, 1, 0))


def _would_break(g: SymGuard) -> Mapping[RefusalCode, z3.BoolRef]:
    """Per code: admitting this request would break what the code guards."""
    a, lim = _after(g, True), g.limits
    return {
        RefusalCode.DEPTH_LIMIT: a.depth > lim.max_depth,
        RefusalCode.TOTAL_LIMIT: a.total > lim.max_total,
        RefusalCode.PER_PARENT_LIMIT: a.children > lim.max_per_parent,
        RefusalCode.CONCURRENCY_LIMIT: a.running > lim.max_concurrent,
        RefusalCode.DUPLICATE_TASK_WARNING: z3.And(g.known_task, z3.Not(g.override)),
    }


def _within(a: _After, lim: SymLimits) -> z3.BoolRef:
    return z3.And(
        a.depth <= lim.max_depth,
        a.total <= lim.max_total,
        a.children <= lim.max_per_parent,
        a.running <= lim.max_concurrent,
    )


def guard_claim(g: SymGuard, d: SymDecision) -> z3.BoolRef:
    """CHILD-4 for one decision: (a) refused with the first check, in
    `GUARD_ORDER`, that admitting would break, and admitted when none breaks;
    (b) an admitted spawn leaves every count within its limit (whether or not
    its agent id was already running) and is no unforced duplicate."""
    breaks = _would_break(g)
    order: list[z3.BoolRef] = []
    earlier: list[z3.BoolRef] = []
    for c in GUARD_ORDER:
        first = z3.And(breaks[c], *[z3.Not(e) for e in earlier])
        order.append(z3.And(z3.Not(d.admitted), d.code == CODE[c]) == first)
        earlier.append(breaks[c])
    admitted_iff = d.admitted == z3.Not(ors(earlier))
    lim = g.limits
    limits = z3.Implies(
        d.admitted,
        z3.And(
            _within(_after(g, True), lim),
            _within(_after(g, False), lim),
            z3.Not(z3.And(g.known_task, z3.Not(g.override))),
        ),
    )
    return z3.And(admitted_iff, *order, limits)
