"""The loop system's state space: its variables (`state`, `params`), the
cleared slot, and the accessors every layer reads an event through.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from metis_model._loop_state import ENABLED
from metis_model._loop_state import Phase

from ._perm import SymFacts
from ._sorts import ors
from ._system_config import REGIONS
from ._system_config import LoopConfig
from ._system_fields import _GLOBAL
from ._system_fields import _PARAM_BOOLS
from ._system_fields import _PARAM_ENUMS
from ._system_fields import _PARAM_INTS
from ._system_fields import _PARAM_REGION_BOOLS
from ._system_fields import _PARAM_SLOT_BOOLS
from ._system_fields import _REGION_FIELDS
from ._system_fields import _SLOT_BOOLS
from ._system_fields import _SLOT_ENUMS
from ._system_fields import _SLOT_FIELDS
from ._system_fields import _STATE_BOOLS
from ._system_fields import EVENT
from ._system_fields import PHASE
from ._system_fields import _region_names
from ._system_terms import Index
from ._system_terms import Params
from ._system_terms import Slots
from ._system_terms import State

__all__ = ["LoopSpace"]


class LoopSpace:
    """What every layer of `LoopSystem` shares: its bounds and variables."""

    def __init__(self, config: LoopConfig | None = None) -> None:
        self.config = config or LoopConfig()
        self.K = self.config.slots
        self.J = self.config.jobs
        self.over = Slots(self.K, self.J, self.config.parametric)
        self.parametric = self.config.parametric

    # --- variables -------------------------------------------------------

    def state_names(self) -> list[str]:
        names = [*_GLOBAL, *_STATE_BOOLS]
        for i in range(self.K):
            names += [f"{f}{i}" for f in _SLOT_BOOLS]
            names += [f"{f}{i}" for f in _SLOT_ENUMS]
            names += _region_names(i)
        names += [f"job{j}" for j in range(self.J)]
        return names

    def state(self, tag: str) -> State:
        values: dict[str, z3.ExprRef] = {}
        for name, fin in _GLOBAL.items():
            values[name] = fin.const(f"{name}@{tag}")
        for name in _STATE_BOOLS:
            values[name] = z3.Bool(f"{name}@{tag}")
        if self.parametric:
            N, B = z3.IntSort(), z3.BoolSort()
            funcs = {f: z3.Function(f"{f}@{tag}", N, B) for f in (*_SLOT_BOOLS, "job")}
            for f, fin in _SLOT_ENUMS.items():
                funcs[f] = z3.Function(f"{f}@{tag}", N, fin.sort)
            for f in _REGION_FIELDS:
                funcs[f] = z3.Function(f"{f}@{tag}", N, N, B)
            funcs["key"] = z3.Function(f"key@{tag}", N, N)  # any number of keys
            return State(values, self.K, self.J, funcs, self.over)
        for i in range(self.K):
            for f in _SLOT_BOOLS:
                values[f"{f}{i}"] = z3.Bool(f"{f}{i}@{tag}")
            for f, fin in _SLOT_ENUMS.items():
                values[f"{f}{i}"] = fin.const(f"{f}{i}@{tag}")
            for name in _region_names(i):
                values[name] = z3.Bool(f"{name}@{tag}")
        for j in range(self.J):
            values[f"job{j}"] = z3.Bool(f"job{j}@{tag}")
        return State(values, self.K, self.J, over=self.over)

    def params(self, tag: str) -> Params:
        values: dict[str, z3.ExprRef] = {}
        names = [*_PARAM_BOOLS]
        names += [f"{f}{i}" for f in _PARAM_SLOT_BOOLS for i in range(self.K)]
        names += [f"{f}{r}" for f in _PARAM_REGION_BOOLS for r in range(REGIONS)]
        for name in names:
            values[name] = z3.Bool(f"p.{name}@{tag}")
        for name in _PARAM_INTS:
            values[name] = z3.Int(f"p.{name}@{tag}")
        for name, fin in _PARAM_ENUMS.items():
            values[name] = fin.const(f"p.{name}@{tag}")
        facts = SymFacts.fresh(f"p.facts@{tag}.", self.config.rule_slots)
        if not self.parametric:
            return Params(values, facts)
        N, B = z3.IntSort(), z3.BoolSort()
        funcs = {
            f: z3.Function(f"p.{f}@{tag}", N, B) for f in (*_PARAM_SLOT_BOOLS, *_PARAM_REGION_BOOLS)
        }
        values["dkey"] = z3.Int(f"p.dkey@{tag}")
        return Params(values, facts, funcs)

    # --- a cleared slot ------------------------------------------------

    def canonical(self, i: int) -> dict[str, z3.ExprRef]:
        out: dict[str, z3.ExprRef] = {f"{f}{i}": z3.BoolVal(False) for f in _SLOT_BOOLS}
        for f, fin in _SLOT_ENUMS.items():
            out[f"{f}{i}"] = fin[fin.members[0]]
        for name in _region_names(i):
            out[name] = z3.BoolVal(False)
        return out

    def canon(self, field: str) -> z3.ExprRef:
        """The value of a per-call field in a cleared slot."""
        if field in _SLOT_ENUMS:
            fin = _SLOT_ENUMS[field]
            return fin[fin.members[0]]
        if field == "key" and self.parametric:
            return z3.IntVal(0)
        return z3.BoolVal(False)

    def cleared(self, s: State, i: Index) -> list[z3.BoolRef]:
        """Call i's fields (all but `inb`, regions included) are canonical."""
        out = [s.b(f, i) == self.canon(f) for f in _SLOT_FIELDS if f != "inb"]
        if self.parametric:
            out.append(self.over.all_calls(lambda r: z3.Not(s.region("rd", i, r))))
            out.append(self.over.all_calls(lambda r: z3.Not(s.region("wr", i, r))))
        else:
            out += [z3.Not(s.region(f, i, r)) for f in _REGION_FIELDS for r in range(REGIONS)]
        return out

    # --- reading an event ----------------------------------------------

    def _ev(self, p: Params, kind: str) -> z3.BoolRef:
        return p["ev"] == EVENT[kind]

    def _at(self, p: Params, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """f(slot) for the slot the event names (False for a foreign slot;
        parametric, a foreign call is any natural not in the batch)."""
        if self.parametric:
            return z3.And(p["slot"] >= 0, f(p["slot"]))
        return ors([z3.And(p["slot"] == i, f(i)) for i in range(self.K)])

    def _found(self, s: State, p: Params) -> z3.BoolRef:
        return self._at(p, lambda i: s.b("inb", i))

    def _job_at(self, s: State, p: Params) -> z3.BoolRef:
        if self.parametric:
            return z3.And(p["jslot"] >= 0, s.b("job", p["jslot"]))
        return ors([z3.And(p["jslot"] == j, s.b("job", j)) for j in range(self.J)])

    def enabled_in_phase(self, phase: z3.ExprRef, ev: z3.ExprRef) -> z3.BoolRef:
        """LOOP-1's table, read from `_loop_state.ENABLED`."""
        return PHASE.table(phase, {ph: EVENT.is_in(ev, sorted(ENABLED[ph])) for ph in Phase})
