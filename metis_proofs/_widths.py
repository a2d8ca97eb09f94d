"""Loop proofs for every width: the same encoding, over unboundedly many calls.

`LoopSystem(LoopConfig(parametric=True))` is the loop system with every
natural number a call (a job, a queue key, a footprint region): per-call
fields are functions over the naturals and "some call" / "every call" are
quantifiers (`_system_terms.Slots`), so the text of the encoding is the one the
finite proofs use. The lemmas Houdini kept in the finite system become
quantified families (`prefix-{i}` -> for every call i); z3 (MBQI) then proves

1. the families hold initially,
2. they are inductive (each family, after any step, from all of them),
3. per property X: no step from a state satisfying them reports X,

for any number of calls per batch, outstanding jobs, queue keys and regions.
Rules per decision are `LoopConfig.rule_slots` here; `_rule_cutoff.py`
proves that this covers any number of rules (the scope then says so). A
timeout is `None`: no claim for all widths, and the finite proof's scope
stands.
"""

from __future__ import annotations

import re
import time

import attrs
import z3

from ._engine import Invariant
from ._system import LoopSystem
from ._system_config import LoopConfig
from ._system_fields import CHECK

__all__ = [
    "ALL_WIDTHS",
    "ALL_WIDTHS_AND_RULES",
    "WidthProof",
    "Widths",
    "all_widths_scope",
    "family",
]

ALL_WIDTHS = "proved for all widths"


def family(name: str) -> str:
    """`exclusive-alone-0-2` / `exclusive-alone-L.i-L.j` -> `exclusive-alone`."""
    return re.sub(r"(-(\d+|L\.[ij]))+$", "", name)


@attrs.frozen
class WidthProof:
    """The shared part (families initial and inductive) of the proofs."""

    families: tuple[str, ...]
    seconds: float


class Widths:
    """One solver over `lemmas(s) & trans(s, p, t)` of the parametric system."""

    def __init__(self, config: LoopConfig, finite: Invariant, timeout_s: float) -> None:
        self.system = LoopSystem(attrs.evolve(config, parametric=True))
        self.timeout_ms = max(1, int(timeout_s * 1000))
        kept = {family(n) for n in finite.names}
        lost = {family(n) for n in finite.dropped}
        self.families = tuple(sorted(kept - lost))
        self.proof: WidthProof | bool | None = False

    def _solver(self) -> z3.Solver:
        solver = z3.Solver()
        solver.set("timeout", self.timeout_ms)
        return solver

    def _lemmas(self, tag: str) -> dict[str, z3.BoolRef]:
        s = self.system.state(tag)
        return {family(n): b for n, b in self.system.lemmas(s) if family(n) in self.families}

    def _prepare(self) -> WidthProof | None:
        start = time.perf_counter()
        sys_ = self.system
        s0 = sys_.state("w.init")
        init = self._solver()
        init.add(sys_.init(s0))
        init.add(z3.Not(z3.And(list(self._lemmas("w.init").values()))))
        if init.check() != z3.unsat:
            return None
        s, p, t = sys_.state("w.pre"), sys_.params("w.step"), sys_.state("w.post")
        self.pre, self.post = s, t
        self.step = self._solver()
        self.step.add(*self._lemmas("w.pre").values())
        self.step.add(sys_.trans(s, p, t))
        after = self._lemmas("w.post")
        for name in self.families:
            if self.step.check(z3.Not(after[name])) != z3.unsat:
                return None
        return WidthProof(self.families, time.perf_counter() - start)

    def shared(self) -> WidthProof | None:
        if self.proof is False:
            self.proof = self._prepare()
        assert not isinstance(self.proof, bool)
        return self.proof

    def queries(self, inv_id: str) -> dict[str, z3.BoolRef]:
        """The proof's queries as formulas, each expected unsat (for a second
        solver): the families initially, each family after a step, X's step."""
        sys_ = self.system
        s0 = sys_.state("w.init")
        init = sys_.init(s0)
        out = {f"init {n}": z3.And(init, z3.Not(b)) for n, b in self._lemmas("w.init").items()}
        s, p, t = sys_.state("w.pre"), sys_.params("w.step"), sys_.state("w.post")
        step = z3.And(*self._lemmas("w.pre").values(), sys_.trans(s, p, t))
        out |= {f"step {n}": z3.And(step, z3.Not(b)) for n, b in self._lemmas("w.post").items()}
        out[f"step {inv_id}"] = z3.And(step, t["viol"] == CHECK[inv_id])
        return out

    def prove(self, inv_id: str) -> float | None:
        """Seconds of X's own step query when it is unsat; None otherwise."""
        if self.shared() is None:
            return None
        start = time.perf_counter()
        answer = self.step.check(self.post["viol"] == CHECK[inv_id])
        return time.perf_counter() - start if answer == z3.unsat else None


ALL_WIDTHS_AND_RULES = f"{ALL_WIDTHS} of calls, jobs, queue keys, regions and rules"


def all_widths_scope(config: LoopConfig, rules: bool = False) -> str:
    """`rules`: the rule cutoff (`_rule_cutoff.py`) is proved too."""
    if rules:
        return ALL_WIDTHS_AND_RULES
    return (
        f"{ALL_WIDTHS} of calls, jobs, queue keys and regions "
        f"(\u2264 {config.rule_slots} rules per decision)"
    )
