"""Starting a call, in both layers of the loop system: the scheduler's checks
in the checker mirror (`_interference.interference`) and the protocol's
guard on an effect's start (`_may_start`, with the preflight rule).
"""

from __future__ import annotations

import z3

from metis_model._loop_state import _FOREGROUND
from metis_trace import CallClass
from metis_trace import EffectOutcome

from ._system_fields import CLS
from ._system_fields import OUT
from ._system_space import LoopSpace
from ._system_terms import Index
from ._system_terms import Params
from ._system_terms import State

__all__ = ["LoopScheduling"]


class LoopScheduling(LoopSpace):
    """When a call may start: the mirror's SCHED checks, the protocol's guard."""

    def _sched_checks(self, s: State, p: Params, i: Index) -> list[tuple[z3.BoolRef, str]]:
        """`_interference.interference` for starting slot i, in its order."""
        ex = CallClass.EXCLUSIVE
        over = self.over
        sched1 = over.any_other(
            i,
            lambda j: z3.And(
                s.b("inb", j),
                s.b("running", j),
                CLS.is_in(s.e("cls", j), _FOREGROUND),
                z3.Or(s.is_cls(i, ex), s.is_cls(j, ex)),
            ),
        )
        sched3 = over.any_before(
            i, lambda j: z3.And(s.unfinished(j), z3.Or(s.is_cls(i, ex), s.is_cls(j, ex)))
        )
        q = CallClass.QUEUE
        sched2 = z3.And(
            s.is_cls(i, q),
            over.any_other(
                i,
                lambda j: z3.And(
                    s.b("inb", j),
                    s.is_cls(j, q),
                    s.b("key", j) == s.b("key", i),
                    z3.Or(s.b("running", j), z3.And(j < i, s.unfinished(j))),
                ),
            ),
        )
        sched6 = over.any_other(
            i,
            lambda j: z3.And(
                s.b("inb", j),
                s.conflict(i, j),
                z3.Or(s.b("running", j), z3.And(j < i, s.unfinished(j))),
            ),
        )
        return [(sched1, "SCHED-1"), (sched3, "SCHED-3"), (sched2, "SCHED-2"), (sched6, "SCHED-6")]

    def preflight_done(self, s: State) -> z3.BoolRef:
        """Every call of the batch is decided and settled. (Stated for every
        call, not as "the last call is", which decisions in call order make
        equivalent: over unboundedly many calls the last one is no
        first-order notion, and the all-widths proof needs no induction.)"""
        return self.over.all_calls(lambda i: z3.Implies(s.b("inb", i), s.done(i)))

    def _may_start(self, s: State, p: Params, i: Index) -> z3.BoolRef:
        cfg = self.config
        cls, key = p["dcls"], p["dkey"]
        skips_gate = z3.And(
            z3.BoolVal(cfg.ablated("gate-skips-safe")),
            z3.Not(s.b("decided", i)),
            cls == CLS[CallClass.SAFE],
        )
        gate = z3.Or(s.admitted(i), skips_gate)
        known = z3.Implies(s.b("decided", i), z3.And(cls == s.e("cls", i), key == s.b("key", i)))
        error = s.e("out", i) == OUT[EffectOutcome.ERROR]
        may_retry = (
            error
            if cfg.ablated("retry-after-commit")
            else z3.And(error, z3.Not(s.b("committed", i)))
        )
        retry = z3.Or(z3.Not(s.b("finished", i)), may_retry)
        preflight = z3.Or(
            z3.BoolVal(cfg.ablated("no-preflight")), skips_gate, self.preflight_done(s)
        )

        def exclusive(j: Index | None) -> z3.BoolRef:
            if cfg.ablated("exclusive-as-safe"):
                return z3.BoolVal(False)
            if j is None:
                return cls == CLS[CallClass.EXCLUSIVE]
            return s.is_cls(j, CallClass.EXCLUSIVE)

        over = self.over

        def running(j: Index) -> z3.BoolRef:
            return z3.And(s.b("inb", j), s.b("running", j))

        barrier = z3.And(
            over.all_other(i, lambda j: z3.Not(z3.And(running(j), exclusive(j)))),
            over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), exclusive(j)))),
        )
        alone = z3.Implies(
            exclusive(None),
            z3.And(
                over.all_other(i, lambda j: z3.Not(running(j))),
                over.all_before(i, lambda j: z3.Not(s.unfinished(j))),
            ),
        )

        def same_queue(j: Index) -> z3.BoolRef:
            return z3.And(s.is_cls(j, CallClass.QUEUE), s.b("key", j) == key)

        fifo = (
            z3.BoolVal(True)
            if cfg.ablated("queue-not-fifo")
            else over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), same_queue(j))))
        )
        queue = z3.Implies(
            cls == CLS[CallClass.QUEUE],
            z3.And(over.all_other(i, lambda j: z3.Not(z3.And(running(j), same_queue(j)))), fifo),
        )
        # SCHED-6: a Safe call and a writer whose footprints conflict never
        # overlap and run in call order.
        footprint = (
            z3.BoolVal(True)
            if cfg.ablated("footprint-blind")
            else z3.And(
                over.all_other(i, lambda j: z3.Not(z3.And(running(j), s.conflict(i, j)))),
                over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), s.conflict(i, j)))),
            )
        )
        return z3.And(
            z3.Not(s.b("running", i)),
            z3.Not(s.b("closed", i)),
            s.b("surf", i),
            gate,
            known,
            retry,
            preflight,
            barrier,
            alone,
            queue,
            footprint,
        )
