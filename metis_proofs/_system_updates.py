"""What each event does to the loop system's state: conditional updates
collected per variable (`_Chain`) and built into If-chains.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from metis_model._loop_state import Phase
from metis_trace import Decision
from metis_trace import EffectOutcome

from ._perm import DECISION
from ._perm import waitless
from ._system_config import REGIONS
from ._system_fields import _REGION_FIELDS
from ._system_fields import _SLOT_FIELDS
from ._system_fields import OUT
from ._system_fields import PHASE
from ._system_space import LoopSpace
from ._system_terms import Index
from ._system_terms import Params
from ._system_terms import Slots
from ._system_terms import State

__all__ = ["LoopUpdates"]


def _val(value: z3.ExprRef | bool) -> z3.ExprRef:
    return z3.BoolVal(value) if isinstance(value, bool) else value


class _Chain:
    """Collects conditional updates per variable; builds If-chains at the end.

    Per-call (per-job, per-region) updates are given as functions of the
    index: finite, they are expanded into the slots' variables at once;
    parametric, they are kept and built for a quantified index."""

    def __init__(self, over: Slots) -> None:
        self.over = over
        self.cases: dict[str, list[tuple[z3.BoolRef, z3.ExprRef]]] = {}
        self.indexed: dict[str, list[tuple[Callable[..., z3.BoolRef], Callable[..., Any]]]] = {}

    def set(self, name: str, when: z3.BoolRef, value: z3.ExprRef | bool) -> None:
        self.cases.setdefault(name, []).append((when, _val(value)))

    def set_call(
        self, field: str, when: Callable[[Index], z3.BoolRef], value: Callable[[Index], Any]
    ) -> None:
        if self.over.parametric:
            self.indexed.setdefault(field, []).append((when, value))
        else:
            for i in range(self.over.K):
                self.set(f"{field}{i}", when(i), value(i))

    def set_job(self, when: Callable[[Index], z3.BoolRef], value: Callable[[Index], Any]) -> None:
        if self.over.parametric:
            self.indexed.setdefault("job", []).append((when, value))
        else:
            for j in range(self.over.J):
                self.set(f"job{j}", when(j), value(j))

    def set_region(
        self,
        field: str,
        when: Callable[[Index], z3.BoolRef],
        value: Callable[[Index, Index], Any],
    ) -> None:
        if self.over.parametric:
            self.indexed.setdefault(field, []).append((when, value))
        else:
            for i in range(self.over.K):
                for r in range(REGIONS):
                    self.set(f"{field}{i}_{r}", when(i), value(i, r))

    def build(self, name: str, current: z3.ExprRef) -> z3.ExprRef:
        out = current
        for when, value in reversed(self.cases.get(name, [])):
            out = z3.If(when, value, out)
        return out

    def build_at(self, field: str, current: z3.ExprRef, *index: Index) -> z3.ExprRef:
        """Parametric: the next value of `field` at a (quantified) index."""
        out = current
        for when, value in reversed(self.indexed.get(field, [])):
            out = z3.If(when(index[0]), _val(value(*index)), out)
        return out


class LoopUpdates(LoopSpace):
    """The next state's values, per event."""

    def _updates(self, s: State, p: Params) -> _Chain:
        c = _Chain(self.over)

        def ev(kind: str) -> z3.BoolRef:
            return self._ev(p, kind)

        def clear(when: z3.BoolRef) -> None:
            for f in _SLOT_FIELDS:
                c.set_call(f, lambda i: when, lambda i, f=f: self.canon(f))  # type: ignore[misc]
            for f in _REGION_FIELDS:
                c.set_region(f, lambda i: when, lambda i, r: False)

        def slot(kind: str) -> Callable[[Index], z3.BoolRef]:
            return lambda i: z3.And(ev(kind), p["slot"] == i)

        c.set("phase", ev("turn_start"), PHASE[Phase.PREPARING])
        c.set("phase", ev("request"), PHASE[Phase.STREAMING])
        retry = z3.And(ev("compaction"), s["phase"] == PHASE[Phase.STREAMING])
        c.set("phase", retry, PHASE[Phase.PREPARING])
        clear(ev("request"))
        answered = z3.And(ev("assistant"), p["n"] == 0)
        batch = z3.And(ev("assistant"), p["n"] > 0)
        c.set("phase", answered, PHASE[Phase.ANSWERED])
        c.set("phase", batch, PHASE[Phase.BATCH])
        c.set("eff", batch, False)
        c.set("canc", batch, False)
        c.set("stsrc", batch, False)
        fresh: dict[str, Callable[[Index], z3.BoolRef]] = {
            "inb": lambda i: p["n"] > i,
            "surf": lambda i: z3.And(p["n"] > i, p.at("surf", i)),
            "hkpend": lambda i: z3.And(p["n"] > i, p.at("hneed", i)),
        }
        for f in _SLOT_FIELDS:
            c.set_call(f, lambda i: batch, fresh.get(f, lambda i, f=f: self.canon(f)))  # type: ignore[misc]
        for f in _REGION_FIELDS:
            c.set_region(f, lambda i: batch, lambda i, r: False)
        hook, dec, ans = slot("hook"), slot("decision"), slot("ask_resolved")
        start, end, hs = slot("effect_start"), slot("effect_end"), slot("handshake")
        c.set_call("vet", hook, lambda i: z3.Or(s.b("vet", i), p["vetoed"]))
        c.set_call("hkpend", hook, lambda i: z3.Not(p["hdone"]))
        c.set_call("decided", dec, lambda i: True)
        c.set_call("dec", dec, lambda i: p["d"])
        c.set_call("cls", dec, lambda i: p["dcls"])
        c.set_call("key", dec, lambda i: p["dkey"])
        c.set_region("rd", dec, lambda i, r: p.at("drd", r))
        c.set_region("wr", dec, lambda i, r: p.at("dwr", r))
        c.set_call(
            "hp", dec, lambda i: z3.And(p["d"] == DECISION[Decision.ASK], waitless(p["droute"]))
        )
        c.set_call("settled", ans, lambda i: True)
        c.set_call("appr", ans, lambda i: p["approved"])
        c.set_call("hp", ans, lambda i: False)
        c.set_call("running", start, lambda i: True)
        c.set_call("started", start, lambda i: True)
        c.set_call("committed", slot("commit"), lambda i: True)
        c.set_call("running", end, lambda i: False)
        c.set_call("finished", end, lambda i: True)
        c.set_call("out", end, lambda i: p["outcome"])
        c.set_call(
            "cov", lambda i: z3.And(ev("cancel"), p["scoped"], p.at("cv", i)), lambda i: True
        )
        c.set_call("running", hs, lambda i: False)
        c.set_call("finished", hs, lambda i: True)
        c.set_call("out", hs, lambda i: OUT[EffectOutcome.OK])
        c.set_call("closed", slot("result"), lambda i: True)
        c.set("eff", ev("effect_start"), True)
        c.set_job(lambda j: z3.And(ev("handshake"), p["jslot"] == j), lambda j: True)
        c.set_job(lambda j: z3.And(ev("job_done"), p["jslot"] == j), lambda j: False)
        c.set("phase", ev("results_sent"), PHASE[Phase.READY])
        clear(ev("results_sent"))
        c.set("canc", z3.And(ev("cancel"), z3.Not(p["scoped"])), True)
        c.set("stsrc", z3.And(ev("cancel"), z3.Not(p["scoped"])), True)
        c.set("phase", ev("interrupt"), PHASE[Phase.INTERRUPTED])
        c.set("canc", ev("interrupt"), True)
        c.set("stsrc", z3.And(ev("interrupt"), p["sourced"]), True)
        c.set("phase", ev("resume"), PHASE[Phase.RESUMED])
        c.set("phase", ev("repair"), PHASE[Phase.READY])
        clear(ev("repair"))
        c.set("phase", ev("run_end"), PHASE[Phase.ENDED])
        return c
