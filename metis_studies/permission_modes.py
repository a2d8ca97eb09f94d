"""Permission modes over the whole fact space, and one of the model's ablations.

The reference model's `resolve` is a pure function of finitely many facts
(once rules are abstracted to their behaviour, source and recency). This
study enumerates the fact space, tabulates decisions per mode, checks the
mode order pointwise (a mode below another never decides more permissively
on any fact combination), draws mode x fact decision maps, and runs an
ablation: rules resolved *authority first* (the strongest rule of any
behaviour wins) instead of *deny first* (specs/permissions.md). The
ablation must loosen some decisions, or deny-first would buy nothing.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import attrs

from metis_model import DECISION_RANK
from metis_model import mode_at_most
from metis_model import resolve
from metis_trace import AUTHORITY
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind


def rule_choices() -> list[tuple[RuleRef, ...]]:
    """No rule, one rule of each behaviour and source, and every pair of two."""
    kinds = list(itertools.product(RuleBehavior, Source))
    out: list[tuple[RuleRef, ...]] = [()]
    out += [(RuleRef(behavior=b, source=s, pattern="r"),) for b, s in kinds]
    for (b1, s1), (b2, s2) in itertools.combinations(kinds, 2):
        first = RuleRef(behavior=b1, source=s1, pattern="a")
        out.append((first, RuleRef(behavior=b2, source=s2, pattern="b", recency=1)))
    return out


def fact_space(mode: Mode, rules: list[tuple[RuleRef, ...]] | None = None) -> Iterator[Facts]:
    flags = (False, True)
    for kind, protected, secret, in_scope, transition, chosen in itertools.product(
        ToolKind, flags, flags, flags, flags, rules if rules is not None else rule_choices()
    ):
        yield Facts(
            mode=mode,
            kind=kind,
            protected=protected,
            secret=secret,
            in_scope=in_scope,
            transition=transition,
            rules=chosen,
        )


def authority_first(facts: Facts) -> Decision:
    """The ablated rule order: the single strongest rule decides."""
    base = resolve(facts)
    if base.stage not in (Stage.DENY_RULE, Stage.ASK_RULE, Stage.ALLOW_RULE):
        return base.decision
    strongest = max(facts.rules, key=lambda r: (-AUTHORITY.index(r.source), r.recency))
    if strongest.behavior is RuleBehavior.ALLOW:
        return Decision.ALLOW
    if strongest.behavior is RuleBehavior.ASK:
        return Decision.DENY if facts.mode is Mode.DONT_ASK else Decision.ASK
    return Decision.DENY


@attrs.frozen
class DecisionMap:
    """Decisions for every mode (rows) and fact combination (columns), under
    one rule situation (`rules`: none, or one rule of a behaviour)."""

    rules: str
    modes: tuple[Mode, ...]
    columns: tuple[str, ...]
    decisions: tuple[tuple[Decision, ...], ...]  # [mode][column]


MAP_RULES: dict[str, tuple[RuleRef, ...]] = {
    "no rule": (),
    "allow rule": (RuleRef(behavior=RuleBehavior.ALLOW, source=Source.PROJECT, pattern="r"),),
    "ask rule": (RuleRef(behavior=RuleBehavior.ASK, source=Source.PROJECT, pattern="r"),),
    "deny rule": (RuleRef(behavior=RuleBehavior.DENY, source=Source.PROJECT, pattern="r"),),
}


def _column(kind: ToolKind, protected: bool, secret: bool, in_scope: bool) -> str:
    flags = "".join(f for f, on in (("P", protected), ("S", secret), ("O", not in_scope)) if on)
    return f"{kind.value}{'+' + flags if flags else ''}"


def decision_map(name: str) -> DecisionMap:
    rules = MAP_RULES[name]
    combos = list(itertools.product(ToolKind, (False, True), (False, True), (True, False)))
    rows = []
    for mode in Mode:
        row = []
        for kind, protected, secret, in_scope in combos:
            facts = Facts(
                mode=mode,
                kind=kind,
                protected=protected,
                secret=secret,
                in_scope=in_scope,
                transition=False,
                rules=rules,
            )
            row.append(resolve(facts).decision)
        rows.append(tuple(row))
    return DecisionMap(name, tuple(Mode), tuple(_column(*c) for c in combos), tuple(rows))


@attrs.frozen
class PermissionModes:
    """The whole fact space per mode: decisions by kind, the mode order
    checked pointwise, and how often the authority-first ablation loosens."""

    combinations_per_mode: int
    decisions: tuple[tuple[Mode, tuple[tuple[Decision, int], ...]], ...]
    ordered_pairs: int
    order_violations: int
    loosened: tuple[tuple[Mode, int], ...]
    maps: tuple[DecisionMap, ...]

    @property
    def ok(self) -> bool:
        """The mode order holds and the ablation matters (deny-first is safer)."""
        return self.order_violations == 0 and sum(n for _, n in self.loosened) > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "combinations_per_mode": self.combinations_per_mode,
            "decisions": {m.value: {d.value: n for d, n in c} for m, c in self.decisions},
            "ordered_pairs": self.ordered_pairs,
            "order_violations": self.order_violations,
            "authority_first_loosens": {m.value: n for m, n in self.loosened},
            "maps": {
                m.rules: {
                    "columns": list(m.columns),
                    "rows": {
                        mode.value: [d.value for d in row]
                        for mode, row in zip(m.modes, m.decisions, strict=True)
                    },
                }
                for m in self.maps
            },
            "ok": self.ok,
        }


def permission_modes() -> PermissionModes:
    rules = rule_choices()
    space = {mode: list(fact_space(mode, rules)) for mode in Mode}
    decided = {mode: [resolve(f) for f in facts] for mode, facts in space.items()}
    counts = tuple(
        (mode, tuple((d, Counter(r.decision for r in decided[mode])[d]) for d in Decision))
        for mode in Mode
    )
    pairs = violations = 0
    for child, parent in itertools.product(Mode, Mode):
        if child is parent or not mode_at_most(child, parent):
            continue
        pairs += 1
        for facts, mine in zip(space[child], decided[child], strict=True):
            theirs = resolve(facts.model_copy(update={"mode": parent}))
            if DECISION_RANK[mine.decision] > DECISION_RANK[theirs.decision]:
                violations += 1
    loosened = tuple(
        (
            mode,
            sum(
                DECISION_RANK[authority_first(f)] > DECISION_RANK[r.decision]
                for f, r in zip(space[mode], decided[mode], strict=True)
            ),
        )
        for mode in Mode
    )
    return PermissionModes(
        combinations_per_mode=len(space[Mode.DEFAULT]),
        decisions=counts,
        ordered_pairs=pairs,
        order_violations=violations,
        loosened=loosened,
        maps=tuple(decision_map(name) for name in MAP_RULES),
    )
