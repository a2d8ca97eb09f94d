"""Candidate state invariants of the loop system for k-induction (Houdini
keeps the inductive subset), per call and per pair of calls.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence

import z3

from metis_model._loop_state import Phase
from metis_trace import CallClass
from metis_trace import Decision

from ._perm import DECISION
from ._perm import waitless
from ._sorts import ands
from ._system_fields import CHECK
from ._system_fields import OK
from ._system_fields import PHASE
from ._system_space import LoopSpace
from ._system_terms import Index
from ._system_terms import State

__all__ = ["LoopLemmas"]


# Pair lemmas stated for i < j only (the rest: for every j != i).
_ORDERED_LEMMAS = frozenset(
    {"exclusive-barrier", "exclusive-after", "queue-fifo", "footprint-order"}
)


class LoopLemmas(LoopSpace):
    """The candidate lemmas."""

    def lemmas(self, s: State) -> list[tuple[str, z3.BoolRef]]:
        """Candidate state invariants; Houdini keeps the inductive subset.

        Each holds only in states the checker accepted (`viol == ok`)."""
        K = self.K
        out: list[tuple[str, z3.BoolRef]] = []
        # Parametric: one lemma per family, over every call i (and j != i;
        # j > i for the ordered families), named with the bound variables.
        li, lj = z3.Int("L.i"), z3.Int("L.j")
        calls: Sequence[Index] = [li] if self.parametric else range(K)
        pairs: Callable[[Index], Sequence[Index]] = (
            (lambda i: [lj]) if self.parametric else (lambda i: [j for j in range(K) if j != i])
        )

        def add(name: str, body: z3.BoolRef) -> None:
            body = z3.Implies(s["viol"] == CHECK[OK], body)
            if self.parametric and "L.j" in name:
                order = li < lj if name.split("-L.i")[0] in _ORDERED_LEMMAS else li != lj
                body = z3.ForAll([li, lj], z3.Implies(z3.And(li >= 0, lj >= 0, order), body))
            elif self.parametric and "L.i" in name:
                body = z3.ForAll([li], z3.Implies(li >= 0, body))
            out.append((name, body))

        quiet = (Phase.READY, Phase.PREPARING, Phase.STREAMING, Phase.ANSWERED)
        add("batch-has-calls", z3.Implies(s["phase"] == PHASE[Phase.BATCH], s.b("inb", 0)))
        add("sourced-stop-stopped", z3.Implies(s["stsrc"], s["canc"]))
        for i in calls:
            # per call, not for call 0 alone: without a bound, "call 0 is out
            # so every call is" would need induction over the prefix
            add(
                f"no-calls-when-quiet-{i}",
                z3.Implies(PHASE.is_in(s["phase"], quiet), z3.Not(s.b("inb", i))),
            )

            def b(f: str, i: Index = i) -> z3.BoolRef:
                return s.b(f, i)

            canon = ands(self.cleared(s, i))
            add(f"cleared-{i}", z3.Implies(z3.Not(b("inb")), canon))
            if self.parametric or i + 1 < K:
                add(f"prefix-{i}", z3.Implies(s.b("inb", i + 1), b("inb")))
                add(f"in-order-{i}", z3.Implies(s.b("decided", i + 1), s.done(i)))
            add(
                f"settled-ask-{i}",
                z3.Implies(
                    b("settled"), z3.And(b("decided"), s.e("dec", i) == DECISION[Decision.ASK])
                ),
            )
            add(f"approved-settled-{i}", z3.Implies(b("appr"), b("settled")))
            add(
                f"running-admitted-{i}",
                z3.Implies(b("running"), z3.And(s.admitted(i), z3.Not(b("closed")), s["eff"])),
            )
            add(
                f"finished-admitted-{i}", z3.Implies(b("finished"), z3.And(s.admitted(i), s["eff"]))
            )
            add(
                f"committed-started-{i}",
                z3.Implies(
                    b("committed"), z3.And(b("started"), z3.Or(b("running"), b("finished")))
                ),
            )
            add(f"running-started-{i}", z3.Implies(b("running"), b("started")))
            add(f"finished-started-{i}", z3.Implies(b("finished"), b("started")))
            add(
                f"started-ran-{i}",
                z3.Implies(b("started"), z3.And(z3.Or(b("running"), b("finished")), s["eff"])),
            )
            add(f"started-surface-{i}", z3.Implies(b("started"), b("surf")))
            add(f"covered-started-{i}", z3.Implies(b("cov"), b("started")))
            deny = DECISION[Decision.DENY]
            add(
                f"veto-denied-{i}",
                z3.Implies(z3.And(b("decided"), b("vet")), s.e("dec", i) == deny),
            )
            add(
                f"hooks-ran-{i}",
                z3.Implies(
                    z3.And(b("decided"), z3.Not(b("vet")), s.e("dec", i) != deny),
                    z3.Not(b("hkpend")),
                ),
            )
            add(f"eff-preflight-{i}", z3.Implies(z3.And(s["eff"], b("inb")), s.done(i)))
            add(
                f"running-phase-{i}",
                z3.Implies(b("running"), PHASE.is_in(s["phase"], (Phase.BATCH, Phase.INTERRUPTED))),
            )
            add(
                f"resumed-still-{i}",
                z3.Implies(s["phase"] == PHASE[Phase.RESUMED], z3.Not(b("running"))),
            )
            ask_open = z3.And(
                b("decided"), s.e("dec", i) == DECISION[Decision.ASK], z3.Not(b("settled"))
            )
            add(f"hp-exact-{i}", b("hp") == z3.And(ask_open, waitless(s["route"])))
            add(f"closed-decided-{i}", z3.Implies(b("closed"), z3.Or(b("decided"), s["canc"])))
            add(f"unfinished-not-closed-run-{i}", z3.Implies(b("running"), b("inb")))
            for j in pairs(i):
                add(f"hp-one-{i}-{j}", z3.Not(z3.And(b("hp"), s.b("hp", j))))
                add(
                    f"exclusive-alone-{i}-{j}",
                    z3.Implies(
                        z3.And(b("running"), s.is_cls(i, CallClass.EXCLUSIVE)),
                        z3.Not(s.b("running", j)),
                    ),
                )
                same_q = z3.And(
                    s.is_cls(i, CallClass.QUEUE),
                    s.is_cls(j, CallClass.QUEUE),
                    b("key") == s.b("key", j),
                )
                add(f"queue-alone-{i}-{j}", z3.Not(z3.And(same_q, b("running"), s.b("running", j))))
                add(
                    f"footprint-alone-{i}-{j}",
                    z3.Not(z3.And(s.conflict(i, j), b("running"), s.b("running", j))),
                )
                if self.parametric or i < j:
                    started_j = z3.Or(s.b("running", j), s.b("finished", j))
                    add(
                        f"exclusive-barrier-{i}-{j}",
                        z3.Implies(
                            z3.And(s.unfinished(i), s.is_cls(i, CallClass.EXCLUSIVE)),
                            z3.Not(started_j),
                        ),
                    )
                    add(
                        f"exclusive-after-{i}-{j}",
                        z3.Implies(
                            z3.And(s.b("running", j), s.is_cls(j, CallClass.EXCLUSIVE)),
                            z3.Not(s.unfinished(i)),
                        ),
                    )
                    add(
                        f"queue-fifo-{i}-{j}",
                        z3.Implies(z3.And(s.unfinished(i), same_q), z3.Not(started_j)),
                    )
                    add(
                        f"footprint-order-{i}-{j}",
                        z3.Implies(
                            z3.And(s.unfinished(i), s.conflict(i, j)), z3.Not(s.b("started", j))
                        ),
                    )
        return out
