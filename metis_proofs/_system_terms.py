"""The terms the loop system is written in: `Slots` (how it ranges over calls,
jobs and regions, finite or parametric), a step's `State` and its label
`Params`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import TypeAlias

import attrs
import z3

from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import ToolKind

from ._perm import DECISION
from ._perm import KIND
from ._perm import SymFacts
from ._sorts import ands
from ._sorts import ors
from ._system_config import REGIONS
from ._system_fields import CLS

__all__ = ["Index", "Params", "Slots", "State", "queue_edit_z3"]


# A call, job or region: a slot number (finite) or a z3 natural (parametric);
# `Any` because the encoding applies `<`, `+` and `==` to both alike.
Index: TypeAlias = Any


class Slots:
    """How the encoding ranges over calls, jobs and regions.

    Finite: `K` call slots, `J` job slots, `REGIONS` regions, and "some call"
    is an `Or` over them. Parametric: every natural number is a call (a job,
    a region), and "some call" is a quantifier over the naturals; the
    encoding's text is the same either way, so the two cannot drift apart."""

    def __init__(self, K: int, J: int, parametric: bool) -> None:
        self.K, self.J, self.parametric = K, J, parametric
        self._n = 0

    def _var(self) -> z3.ArithRef:
        self._n += 1
        return z3.Int(f"q!{self._n}")

    def _some(self, f: Callable[[Index], z3.BoolRef], lo: Index, hi: Index | None) -> z3.BoolRef:
        v = self._var()
        rng = [v >= lo] + ([] if hi is None else [v < hi])
        return z3.Exists([v], z3.And(*rng, f(v)))

    def _every(self, f: Callable[[Index], z3.BoolRef], lo: Index, hi: Index | None) -> z3.BoolRef:
        v = self._var()
        rng = [v >= lo] + ([] if hi is None else [v < hi])
        return z3.ForAll([v], z3.Implies(z3.And(*rng), f(v)))

    def _any(self, f: Callable[[Index], z3.BoolRef], n: int) -> z3.BoolRef:
        """Some index: any natural if parametric, else one below `n`."""
        if self.parametric:
            return self._some(f, 0, None)
        return ors([f(i) for i in range(n)])

    def any_call(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, self.K)

    def all_calls(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self._every(f, 0, None)
        return ands([f(i) for i in range(self.K)])

    def any_before(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """Some call j < i."""
        if self.parametric:
            return self._some(f, 0, i)
        assert isinstance(i, int)
        return ors([f(j) for j in range(i)])

    def all_before(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self._every(f, 0, i)
        assert isinstance(i, int)
        return ands([f(j) for j in range(i)])

    def any_other(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """Some call j != i."""
        if self.parametric:
            return self.any_call(lambda j: z3.And(j != i, f(j)))
        return ors([f(j) for j in range(self.K) if j != i])

    def all_other(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self.all_calls(lambda j: z3.Implies(j != i, f(j)))
        return ands([f(j) for j in range(self.K) if j != i])

    def any_region(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, REGIONS)

    def any_job(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, self.J)

    def before_done(self, i: Index, done: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """The call before i (if any) is done: decisions run in call order."""
        if self.parametric:
            assert not isinstance(i, int)
            return z3.Or(i == 0, done(i - 1))
        assert isinstance(i, int)
        return done(i - 1) if i > 0 else z3.BoolVal(True)


class State:
    """The state variables of one step, by name (`inb1`, `job0`, `phase`);
    parametric: per-call fields are functions (`inb(i)`), `funcs` by field."""

    def __init__(
        self,
        values: Mapping[str, z3.ExprRef],
        slots: int,
        jobs: int,
        funcs: Mapping[str, z3.FuncDeclRef] | None = None,
        over: Slots | None = None,
    ) -> None:
        self.values = dict(values)
        self.slots = slots
        self.jobs = jobs
        self.funcs = dict(funcs or {})
        self.over = over or Slots(slots, jobs, parametric=False)

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.values[name]

    def b(self, field: str, i: Index) -> z3.BoolRef:
        if self.over.parametric:
            return self.funcs[field](i)
        return self.values[f"{field}{i}"]

    def e(self, field: str, i: Index) -> z3.ExprRef:
        return self.b(field, i)

    # Derived notions, named as in `_loop_state.Call`.
    def admitted(self, i: Index) -> z3.BoolRef:
        return self._decided_as(i, approved=True)

    def refused(self, i: Index) -> z3.BoolRef:
        return self._decided_as(i, approved=False)

    def _decided_as(self, i: Index, approved: bool) -> z3.BoolRef:
        """Admitted (`approved`) or refused: decided so outright (allow, deny),
        or asked and answered so."""
        return z3.And(
            self.b("decided", i),
            z3.Or(
                self.e("dec", i) == DECISION[Decision.ALLOW if approved else Decision.DENY],
                z3.And(
                    self.e("dec", i) == DECISION[Decision.ASK],
                    self.b("settled", i),
                    self.b("appr", i) if approved else z3.Not(self.b("appr", i)),
                ),
            ),
        )

    def done(self, i: Index) -> z3.BoolRef:
        """Decided, and its ask (if any) answered: preflight is over for it."""
        return z3.And(
            self.b("decided", i),
            z3.Or(self.e("dec", i) != DECISION[Decision.ASK], self.b("settled", i)),
        )

    def open(self, i: Index) -> z3.BoolRef:
        return z3.And(self.b("inb", i), z3.Not(self.b("closed", i)))

    def any_open(self) -> z3.BoolRef:
        return self.over.any_call(self.open)

    def any_running(self) -> z3.BoolRef:
        return self.over.any_call(lambda i: z3.And(self.b("inb", i), self.b("running", i)))

    def any_job(self) -> z3.BoolRef:
        return self.over.any_job(lambda j: self.b("job", j))

    def unfinished(self, i: Index) -> z3.BoolRef:
        """Admitted, and neither finished nor closed: what barriers wait for."""
        return z3.And(
            self.b("inb", i),
            self.admitted(i),
            z3.Not(self.b("finished", i)),
            z3.Not(self.b("closed", i)),
        )

    def is_cls(self, i: Index, cls: CallClass) -> z3.BoolRef:
        return self.e("cls", i) == CLS[cls]

    def region(self, field: str, i: Index, r: Index) -> z3.BoolRef:
        if self.over.parametric:
            return self.funcs[field](i, r)
        return self.values[f"{field}{i}_{r}"]

    def conflict(self, i: Index, j: Index) -> z3.BoolRef:
        """`footprints_conflict`: one is Safe and reads an area the other, a
        Queue call, writes (an Exclusive call's conflicts: SCHED-1/3)."""

        def reads_writes(a: Index, b: Index) -> z3.BoolRef:
            return z3.And(
                self.is_cls(a, CallClass.SAFE),
                self.is_cls(b, CallClass.QUEUE),
                self.over.any_region(
                    lambda r: z3.And(self.region("rd", a, r), self.region("wr", b, r))
                ),
            )

        return z3.Or(reads_writes(i, j), reads_writes(j, i))

    def may_have_happened(self, i: Index) -> z3.BoolRef:
        """RETRY-3: its effect started, and it is not Safe or it committed."""
        return z3.And(
            self.b("started", i),
            z3.Or(self.b("committed", i), z3.Not(self.is_cls(i, CallClass.SAFE))),
        )


@attrs.frozen
class Params:
    """The label of one step: the event kind and everything it carries."""

    values: Mapping[str, z3.ExprRef]
    facts: SymFacts
    funcs: Mapping[str, z3.FuncDeclRef] = attrs.field(factory=dict)

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.values[name]

    def at(self, field: str, i: Index) -> z3.BoolRef:
        """A per-call (`surf`, `cv`, ...) or per-region (`drd`) flag."""
        if self.funcs:
            return self.funcs[field](i)
        return self.values[f"{field}{i}"]

    def all_vars(self) -> list[z3.ExprRef]:
        out = list(self.values.values())
        f = self.facts
        out += [f.mode, f.kind, f.protected, f.secret, f.in_scope, f.transition]
        for r in f.rules:
            out += [r.present, r.behavior, r.source, r.recency]
        return out


def queue_edit_z3(cls: z3.ExprRef, kind: z3.ExprRef) -> z3.BoolRef:
    """`_interference.queue_edit`: the decisions SCHED-2's key clause applies to."""
    return z3.And(cls == CLS[CallClass.QUEUE], kind == KIND[ToolKind.EDIT])
