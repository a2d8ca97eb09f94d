"""Permission resolution, settlement and child authority as z3 terms.

`resolve_z3` mirrors `metis_model.resolve` stage by stage over *symbolic*
facts: the mode, kind and flags are variables, and the matching rules are a
fixed number of slots, each with presence, behaviour, source and recency (an
unbounded integer). Decision and stage depend on the rules only through which
behaviours are present, so slots >= the number of behaviours cover every rule
list; extra slots also cover ties and authority order within a behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence

import attrs
import z3

from metis_model._permissions import DECISION_RANK
from metis_model._permissions import STAGE_ORDER
from metis_model._permissions import mode_at_most
from metis_model._permissions import settle_ask
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Stage
from metis_trace import ToolKind

from ._rules import BEHAVIOR
from ._rules import SOURCE
from ._rules import RuleAccess
from ._rules import SlotRules
from ._rules import SymRule
from ._rules import matches
from ._sorts import finite_enum
from ._sorts import ors

MODE = finite_enum(Mode)
KIND = finite_enum(ToolKind)
DECISION = finite_enum(Decision)
STAGE = finite_enum(Stage)
ROUTE = finite_enum(Route)


@attrs.frozen
class SymFacts:
    """`trace.Facts` with every field a z3 term."""

    mode: z3.ExprRef
    kind: z3.ExprRef
    protected: z3.BoolRef
    secret: z3.BoolRef
    in_scope: z3.BoolRef
    transition: z3.BoolRef
    rules: tuple[SymRule, ...]

    @classmethod
    def fresh(cls, prefix: str, rule_slots: int) -> SymFacts:
        def b(name: str) -> z3.BoolRef:
            return z3.Bool(f"{prefix}{name}")

        rules = tuple(
            SymRule(
                b(f"rule{i}.present"),
                BEHAVIOR.const(f"{prefix}rule{i}.behavior"),
                SOURCE.const(f"{prefix}rule{i}.source"),
                z3.Int(f"{prefix}rule{i}.recency"),
            )
            for i in range(rule_slots)
        )
        return cls(
            MODE.const(f"{prefix}mode"),
            KIND.const(f"{prefix}kind"),
            b("protected"),
            b("secret"),
            b("in_scope"),
            b("transition"),
            rules,
        )

    @classmethod
    def of(cls, facts: Facts) -> SymFacts:
        """Concrete facts as z3 constants (one slot per recorded rule)."""
        return cls(
            MODE[facts.mode],
            KIND[facts.kind],
            z3.BoolVal(facts.protected),
            z3.BoolVal(facts.secret),
            z3.BoolVal(facts.in_scope),
            z3.BoolVal(facts.transition),
            tuple(
                SymRule(
                    z3.BoolVal(True), BEHAVIOR[r.behavior], SOURCE[r.source], z3.IntVal(r.recency)
                )
                for r in facts.rules
            ),
        )

    def equals(self, other: SymFacts) -> z3.BoolRef:
        """Field-wise equality (absent rule slots are unconstrained)."""
        same = [
            self.mode == other.mode,
            self.kind == other.kind,
            self.protected == other.protected,
            self.secret == other.secret,
            self.in_scope == other.in_scope,
            self.transition == other.transition,
        ]
        for a, b in zip(self.rules, other.rules, strict=True):
            same.append(a.present == b.present)
            same.append(
                z3.Implies(
                    a.present,
                    z3.And(a.behavior == b.behavior, a.source == b.source, a.recency == b.recency),
                )
            )
        return z3.And(same)

    def decode(self, model: z3.ModelRef) -> Facts:
        """The concrete facts a model assigns (absent slots dropped)."""

        def val(e: z3.ExprRef) -> z3.ExprRef:
            return model.eval(e, model_completion=True)

        rules = []
        for i, r in enumerate(self.rules):
            if z3.is_true(val(r.present)):
                rules.append(
                    RuleRef(
                        behavior=BEHAVIOR.decode(val(r.behavior)),
                        source=SOURCE.decode(val(r.source)),
                        pattern=f"Rule{i}",
                        recency=val(r.recency).as_long(),
                    )
                )
        return Facts(
            mode=MODE.decode(val(self.mode)),
            kind=KIND.decode(val(self.kind)),
            protected=z3.is_true(val(self.protected)),
            secret=z3.is_true(val(self.secret)),
            in_scope=z3.is_true(val(self.in_scope)),
            transition=z3.is_true(val(self.transition)),
            rules=tuple(rules),
        )


@attrs.frozen
class SymResolution:
    decision: z3.ExprRef
    stage: z3.ExprRef
    rule: z3.ArithRef  # index of the deciding rule slot, -1 for none


def has(f: SymFacts, behavior: RuleBehavior) -> z3.BoolRef:
    return SlotRules(f.rules).some(lambda r: matches(r, behavior))


def _ask_or_deny(mode: z3.ExprRef) -> z3.ExprRef:
    return z3.If(mode == MODE[Mode.DONT_ASK], DECISION[Decision.DENY], DECISION[Decision.ASK])


def _mode_fallback(mode: z3.ExprRef, kind: z3.ExprRef) -> z3.ExprRef:
    allow, ask, deny = DECISION[Decision.ALLOW], DECISION[Decision.ASK], DECISION[Decision.DENY]
    harmless = KIND.is_in(kind, (ToolKind.READ_ONLY, ToolKind.PLAN_CONTROL))
    return z3.If(
        z3.Or(mode == MODE[Mode.BYPASS], harmless),
        allow,
        z3.If(
            z3.And(mode == MODE[Mode.ACCEPT_EDITS], kind == KIND[ToolKind.EDIT]),
            allow,
            z3.If(MODE.is_in(mode, (Mode.DONT_ASK, Mode.PLAN)), deny, ask),
        ),
    )


def _any(rules: RuleAccess, behavior: RuleBehavior) -> z3.BoolRef:
    return rules.some(lambda r: matches(r, behavior))


# Each stage: when it applies (from the facts' fields and their rules), and
# what it decides then. Keyed by the shared `Stage` enum; a stage added there
# without an entry here fails at import.
Applies = Callable[[SymFacts, RuleAccess], z3.BoolRef]
Stages = Mapping[Stage, tuple[Applies, Callable[[SymFacts], z3.ExprRef]]]
STAGES: Stages = {
    Stage.TRANSITION: (lambda f, r: f.transition, lambda f: DECISION[Decision.DENY]),
    Stage.PLAN: (
        lambda f, r: z3.And(f.mode == MODE[Mode.PLAN], KIND.is_in(f.kind, MUTATING_KINDS)),
        lambda f: DECISION[Decision.DENY],
    ),
    Stage.DENY_RULE: (lambda f, r: _any(r, RuleBehavior.DENY), lambda f: DECISION[Decision.DENY]),
    Stage.ASK_RULE: (lambda f, r: _any(r, RuleBehavior.ASK), lambda f: _ask_or_deny(f.mode)),
    Stage.BYPASS_IMMUNE: (
        lambda f, r: z3.Or(f.protected, f.secret),
        lambda f: _ask_or_deny(f.mode),
    ),
    Stage.ALLOW_RULE: (
        lambda f, r: _any(r, RuleBehavior.ALLOW),
        lambda f: DECISION[Decision.ALLOW],
    ),
    Stage.SCOPE: (lambda f, r: z3.Not(f.in_scope), lambda f: _ask_or_deny(f.mode)),
    Stage.MODE: (lambda f, r: z3.BoolVal(True), lambda f: _mode_fallback(f.mode, f.kind)),
}
if set(STAGES) != set(STAGE_ORDER):  # pragma: no cover - guards against enum drift
    raise ImportError(f"z3 stages {sorted(STAGES)} do not cover {STAGE_ORDER}")

_RULE_STAGE: Mapping[Stage, RuleBehavior] = {
    Stage.DENY_RULE: RuleBehavior.DENY,
    Stage.ASK_RULE: RuleBehavior.ASK,
    Stage.ALLOW_RULE: RuleBehavior.ALLOW,
}


def stage_applies(
    f: SymFacts, rules: RuleAccess | None = None, stages: Stages = STAGES
) -> list[tuple[Stage, z3.BoolRef]]:
    """Every stage with its applicability, in `STAGE_ORDER` (the rules: `f`'s
    slots unless given)."""
    over = SlotRules(f.rules) if rules is None else rules
    return [(s, stages[s][0](f, over)) for s in STAGE_ORDER]


def stage_decides(f: SymFacts) -> list[tuple[Stage, z3.BoolRef]]:
    """Stage s decides iff it applies and no earlier stage does."""
    out: list[tuple[Stage, z3.BoolRef]] = []
    earlier: list[z3.BoolRef] = []
    for s, applies in stage_applies(f):
        out.append((s, z3.And(applies, *[z3.Not(e) for e in earlier])))
        earlier.append(applies)
    return out


def resolve_z3(
    f: SymFacts, rules: RuleAccess | None = None, stages: Stages = STAGES
) -> SymResolution:
    """The staged order as one If-chain: the first applicable stage decides.
    `rules` replaces `f`'s slots (`_rule_cutoff`: unboundedly many rules)."""
    over = SlotRules(f.rules) if rules is None else rules
    decision: z3.ExprRef = DECISION[Decision.ASK]  # unreachable: MODE always applies
    stage: z3.ExprRef = STAGE[Stage.MODE]
    rule: z3.ArithRef = z3.IntVal(-1)
    for s, applies in reversed(stage_applies(f, over, stages)):
        decision = z3.If(applies, stages[s][1](f), decision)
        stage = z3.If(applies, STAGE[s], stage)
        chosen = over.strongest(_RULE_STAGE[s]) if s in _RULE_STAGE else z3.IntVal(-1)
        rule = z3.If(applies, chosen, rule)
    return SymResolution(decision, stage, rule)


def decision_rank(d: z3.ExprRef) -> z3.ArithRef:
    return DECISION.table(d, {k: z3.IntVal(v) for k, v in DECISION_RANK.items()})


def mode_at_most_z3(child: z3.ExprRef, parent: z3.ExprRef) -> z3.BoolRef:
    """`mode_at_most` as a relation, tabulated from the Python definition."""
    return ors(
        [
            z3.And(child == MODE[c], parent == MODE[p])
            for c in Mode
            for p in Mode
            if mode_at_most(c, p)
        ]
    )


# Routes on which nobody answers an ask, read off `settle_ask` itself.
WAITLESS: tuple[Route, ...] = tuple(
    r for r in Route if not settle_ask(r, Decision.DENY, answer=None).waited
)


def waitless(route: z3.ExprRef) -> z3.BoolRef:
    return ROUTE.is_in(route, WAITLESS)


@attrs.frozen
class SymSettlement:
    approved: z3.BoolRef
    waited: z3.BoolRef
    by_default: z3.BoolRef  # resolver is "headless-default"


def settle_z3(route: z3.ExprRef, headless_default: z3.ExprRef, answer: z3.BoolRef) -> SymSettlement:
    """`settle_ask`: waitless routes take the configured default at once."""
    quiet = waitless(route)
    return SymSettlement(
        approved=z3.If(quiet, headless_default == DECISION[Decision.ALLOW], answer),
        waited=z3.Not(quiet),
        by_default=quiet,
    )


def child_mode_z3(
    parent: z3.ExprRef, requested: z3.ExprRef, requested_none: z3.BoolRef, cloned: bool = True
) -> tuple[z3.ExprRef, z3.BoolRef]:
    """`child_authority`'s mode and whether the spawn is refused.

    `cloned=False` is the `child-gate-not-cloned` ablation: the child simply
    gets the mode it asked for and nothing is refused.
    """
    asked = z3.If(requested_none, parent, requested)
    if not cloned:
        return asked, z3.BoolVal(False)
    mode = z3.If(parent == MODE[Mode.PLAN], MODE[Mode.PLAN], asked)
    return mode, z3.Not(mode_at_most_z3(mode, parent))


def concrete_resolution(facts: Facts) -> tuple[Decision, Stage, int]:
    """Evaluate `resolve_z3` with every input fixed (for agreement tests)."""
    r = resolve_z3(SymFacts.of(facts))
    d, s, i = (z3.simplify(x) for x in (r.decision, r.stage, r.rule))
    return DECISION.decode(d), STAGE.decode(s), i.as_long()


def concrete_settlement(
    route: Route, headless_default: Decision, answer: bool
) -> tuple[bool, bool]:
    s = settle_z3(ROUTE[route], DECISION[headless_default], z3.BoolVal(answer))
    return z3.is_true(z3.simplify(s.approved)), z3.is_true(z3.simplify(s.waited))


def rule_index(rules: Sequence[RuleRef], rule: RuleRef | None) -> int:
    """Position of the deciding rule in a recorded rule list (-1 for none)."""
    if rule is None:
        return -1
    return next(i for i, r in enumerate(rules) if r is rule)
