"""Any number of rules per decision: a cutoff lemma over the same encoding.

The loop system labels a decision with `rule_slots` rule slots. Its step reads
a decision's facts only through `step_view` (the resolution's decision, stage
and speaking rule, whether a deny rule matched) and the facts' other fields,
which do not depend on the rules. Three parts, each an unsat z3 query, close
the bound for every number of rules:

1. *the strongest rule exists*: over rules 0..n-1, some rule speaks for each
   behaviour present (first position of highest authority, then recency);
   by induction over n, base and step (`beaten` is the one definition);
2. *cutoff*: for every decision with any number of rules (`UnboundedRules`:
   presence, behaviour, source, recency are functions over the naturals and
   "some rule" a quantifier, fed to the same `resolve_z3` stages) a sub-list of
   at most `rule_slots` of its rules has the same `step_view`;
3. *the step reads no more*: two labels whose facts have equal views allow
   the same steps of the `LoopSystem` to the same states, in the finite and
   in the parametric (every width) system; a new read of the rules in
   `_system*.py` makes this part sat, not the claim silently wrong.

A run whose decisions carry many rules is therefore a run of the system with
each decision's rules replaced by that sub-list: same states, same checks.
Unknown (a timeout) or sat is no claim (`CutoffProof.proved` is False).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import attrs
import z3

from metis_trace import Facts
from metis_trace import RuleBehavior
from metis_trace import RuleRef

from ._perm import STAGES
from ._perm import Stages
from ._perm import SymFacts
from ._perm import resolve_z3
from ._rules import BEHAVIOR
from ._rules import SOURCE
from ._rules import RuleAccess
from ._rules import RulePred
from ._rules import SlotRules
from ._rules import SymRule
from ._rules import beaten
from ._rules import matches
from ._rules import outranks
from ._sorts import timed
from ._system import LoopSystem
from ._system_config import LoopConfig

__all__ = [
    "CutoffProof",
    "UnboundedRules",
    "cutoff_queries",
    "prove_rule_cutoff",
    "same_view",
    "step_view",
]

_CONTENT = ("rule.behavior", "rule.source", "rule.recency")


class UnboundedRules:
    """A decision's rules 0..n-1 for any n: functions over the naturals."""

    def __init__(self, prefix: str) -> None:
        N = z3.IntSort()
        self.prefix = prefix
        self.n = z3.Int(f"{prefix}n")
        self.present = z3.Function(f"{prefix}present", N, z3.BoolSort())
        self.behavior = z3.Function(f"{prefix}behavior", N, BEHAVIOR.sort)
        self.source = z3.Function(f"{prefix}source", N, SOURCE.sort)
        self.recency = z3.Function(f"{prefix}recency", N, z3.IntSort())
        # What the rule functions satisfy: part 1 proves that every finite
        # list has its strongest rules, so these remove no list.
        self.axioms: list[z3.BoolRef] = [self.n >= 0]
        self._won: dict[RuleBehavior, z3.ArithRef] = {}
        self._q = 0

    def at(self, index: z3.ArithRef) -> SymRule:
        return SymRule(
            self.present(index), self.behavior(index), self.source(index), self.recency(index)
        )

    def _var(self) -> z3.ArithRef:
        self._q += 1
        return z3.Int(f"{self.prefix}q{self._q}")

    def some(self, pred: RulePred, upto: z3.ArithRef | None = None) -> z3.BoolRef:
        v = self._var()
        return z3.Exists(
            [v], z3.And(v >= 0, v < (self.n if upto is None else upto), pred(self.at(v)))
        )

    def speaks(self, w: z3.ArithRef, behavior: RuleBehavior, upto: z3.ArithRef) -> z3.BoolRef:
        """Rule w speaks for `behavior` among rules 0..upto-1."""
        j = self._var()
        others = z3.ForAll(
            [j],
            z3.Implies(
                z3.And(j >= 0, j < upto, j != w),
                z3.Not(beaten(self.at(w), w, self.at(j), j, behavior)),
            ),
        )
        return z3.And(w >= 0, w < upto, matches(self.at(w), behavior), others)

    def strongest(self, behavior: RuleBehavior) -> z3.ArithRef:
        if behavior not in self._won:
            w = z3.Int(f"{self.prefix}strongest.{behavior.value}")
            present = self.some(lambda r: matches(r, behavior))
            self.axioms.append(z3.If(present, self.speaks(w, behavior, self.n), w == -1))
            self._won[behavior] = w
        return self._won[behavior]

    def decode(self, model: z3.ModelRef) -> tuple[RuleRef, ...]:
        n = model.eval(self.n, model_completion=True).as_long()
        out = []
        for i in range(n):
            r = self.at(z3.IntVal(i))
            if z3.is_true(model.eval(r.present, model_completion=True)):
                out.append(
                    RuleRef(
                        behavior=BEHAVIOR.decode(model.eval(r.behavior, model_completion=True)),
                        source=SOURCE.decode(model.eval(r.source, model_completion=True)),
                        pattern=f"Rule{i}",
                        recency=model.eval(r.recency, model_completion=True).as_long(),
                    )
                )
        return tuple(out)


def step_view(f: SymFacts, rules: RuleAccess, stages: Stages = STAGES) -> dict[str, z3.ExprRef]:
    """What the loop's step reads of a decision's rules (part 3 checks it)."""
    res = resolve_z3(f, rules, stages)
    won = rules.at(res.rule)
    return {
        "decision": res.decision,
        "stage": res.stage,
        "deny": rules.some(lambda r: matches(r, RuleBehavior.DENY)),  # PERM-2 reads it
        "ruled": res.rule >= 0,
        "rule.behavior": won.behavior,
        "rule.source": won.source,
        "rule.recency": won.recency,
    }


def same_view(
    a: Mapping[str, z3.ExprRef], b: Mapping[str, z3.ExprRef], drop: frozenset[str] = frozenset()
) -> z3.BoolRef:
    """Equal views (the speaking rule's contents only when there is one)."""
    plain = [a[k] == b[k] for k in a if k not in _CONTENT and k not in drop]
    content = [a[k] == b[k] for k in _CONTENT if k not in drop]
    return z3.And(*plain, z3.Implies(a["ruled"], z3.And(*content)))


def _strongest_exists() -> dict[str, z3.BoolRef]:
    out: dict[str, z3.BoolRef] = {}
    for b in RuleBehavior:
        r = UnboundedRules(f"ind.{b.value}.")
        n, w = r.n, z3.Int(f"ind.{b.value}.w")
        has = r.some(lambda x, b=b: matches(x, b), n)  # type: ignore[misc]
        has_next = r.some(lambda x, b=b: matches(x, b), n + 1)  # type: ignore[misc]
        new = r.at(n)
        takes = z3.And(matches(new, b), z3.Or(z3.Not(has), outranks(new, r.at(w))))
        nxt = z3.If(takes, n, w)
        out[f"strongest {b.value} n=0"] = z3.And(n == 0, has)
        out[f"strongest {b.value} n+1"] = z3.And(
            n >= 0,
            z3.Implies(has, r.speaks(w, b, n)),
            z3.Not(z3.Implies(has_next, r.speaks(nxt, b, n + 1))),
        )
    return out


def _cutoff(slots: int, stages: Stages) -> tuple[z3.BoolRef, SymFacts, UnboundedRules]:
    """The negated cutoff claim: some decision of any width has no sub-list of
    <= `slots` rules with the same view."""
    f = SymFacts.fresh("cut.", 0)
    big = UnboundedRules("cut.rule.")
    want = step_view(f, big, stages)
    picks = [z3.Bool(f"cut.pick{j}") for j in range(slots)]
    index = [z3.Int(f"cut.index{j}") for j in range(slots)]
    small = tuple(
        SymRule(p, big.behavior(i), big.source(i), big.recency(i))
        for p, i in zip(picks, index, strict=True)
    )
    sub = [
        z3.Implies(p, z3.And(i >= 0, i < big.n, big.present(i)))
        for p, i in zip(picks, index, strict=True)
    ]
    got = step_view(f, SlotRules(small), stages)
    differs = z3.Not(z3.And(*sub, same_view(got, want)))
    claim = z3.ForAll([*picks, *index], differs) if slots else differs
    return z3.And(*big.axioms, claim), f, big


def _reads(config: LoopConfig, drop: frozenset[str] = frozenset()) -> z3.BoolRef:
    """The negated part 3: equal views, yet one label allows a step the other
    does not (the same state before and after)."""
    system = LoopSystem(config)
    s, p, t = system.state("rd.pre"), system.params("rd.step"), system.state("rd.post")
    a = p.facts
    b = attrs.evolve(a, rules=SymFacts.fresh("rd.other.", config.rule_slots).rules)
    va, vb = step_view(a, SlotRules(a.rules)), step_view(b, SlotRules(b.rules))
    q = attrs.evolve(p, facts=b)
    return z3.And(same_view(va, vb, drop), system.trans(s, p, t), z3.Not(system.trans(s, q, t)))


def cutoff_queries(
    config: LoopConfig, stages: Stages = STAGES, drop: frozenset[str] = frozenset()
) -> dict[str, z3.BoolRef]:
    """Every part as a formula, each expected unsat (also for cvc5)."""
    return _queries(config, stages, drop)[0]


def _queries(
    config: LoopConfig, stages: Stages, drop: frozenset[str]
) -> tuple[dict[str, z3.BoolRef], SymFacts, UnboundedRules]:
    out = _strongest_exists()
    out["cutoff"], f, big = _cutoff(config.rule_slots, stages)
    out["step reads only the view"] = _reads(attrs.evolve(config, parametric=False), drop)
    out["step reads only the view, every width"] = _reads(
        attrs.evolve(config, parametric=True), drop
    )
    return out, f, big


@attrs.frozen
class CutoffProof:
    """Each part's answer and seconds; a counterexample when cutoff is sat."""

    answers: Mapping[str, str]
    seconds: Mapping[str, float]
    counterexample: Facts | None = None

    @property
    def proved(self) -> bool:
        return bool(self.answers) and all(a == "unsat" for a in self.answers.values())


def prove_rule_cutoff(
    config: LoopConfig,
    timeout_s: float = 30.0,
    stages: Stages = STAGES,
    drop: frozenset[str] = frozenset(),
) -> CutoffProof:
    """Run every part; `stages` and `drop` weaken it (the tests' broken
    decision encoding, a view that leaves a read out)."""
    answers: dict[str, str] = {}
    seconds: dict[str, float] = {}
    cex = None
    queries, f, big = _queries(config, stages, drop)
    for name, query in queries.items():
        solver = timed(z3.Solver(), timeout_s)
        solver.add(query)
        start = time.perf_counter()
        answer = solver.check()
        seconds[name] = round(time.perf_counter() - start, 3)
        answers[name] = str(answer)
        if name == "cutoff" and answer == z3.sat:
            model = _fewest_rules(solver, big, config.rule_slots)
            cex = f.decode(model).model_copy(update={"rules": big.decode(model)})
    return CutoffProof(answers, seconds, cex)


def _fewest_rules(solver: z3.Solver, big: UnboundedRules, slots: int) -> z3.ModelRef:
    """A counterexample with as few rules as z3 finds within a small bound."""
    for n in range(slots + 1, slots + 6):
        if solver.check(big.n == n) == z3.sat:
            return solver.model()
    solver.check()
    return solver.model()
