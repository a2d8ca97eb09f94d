# %% [markdown]
# # Permission modes over the whole fact space
#
# The reference model's `resolve` is a pure function of finitely many facts
# (once rules are abstracted to their behaviour, source and recency). This
# notebook enumerates the fact space, tabulates decisions per mode, checks the
# mode order empirically, and runs one ablation: what changes if rules were
# resolved *authority first* (the strongest rule of any behaviour wins) instead
# of *deny first* (specs/permissions.md).

# %%
from __future__ import annotations

import itertools
from collections import Counter

from metis_model import DECISION_RANK, mode_at_most, resolve
from metis_model.trace import AUTHORITY, Decision, Facts, Mode, RuleBehavior, RuleRef, Source, Stage, ToolKind

RULE_CHOICES: list[tuple[RuleRef, ...]] = [()]
for behavior, source in itertools.product(RuleBehavior, Source):
    RULE_CHOICES.append((RuleRef(behavior=behavior, source=source, pattern="r"),))
for (b1, s1), (b2, s2) in itertools.combinations(itertools.product(RuleBehavior, Source), 2):
    RULE_CHOICES.append((RuleRef(behavior=b1, source=s1, pattern="a"), RuleRef(behavior=b2, source=s2, pattern="b", recency=1)))


def fact_space(mode: Mode):
    for kind, protected, secret, in_scope, transition, rules in itertools.product(
        ToolKind, (False, True), (False, True), (False, True), (False, True), RULE_CHOICES
    ):
        yield Facts(mode=mode, kind=kind, protected=protected, secret=secret, in_scope=in_scope,
                    transition=transition, rules=rules)


# %% [markdown]
# ## Decisions per mode

# %%
table = {}
for mode in Mode:
    table[mode] = Counter(resolve(f).decision for f in fact_space(mode))
size = sum(table[Mode.DEFAULT].values())
print(f"fact combinations per mode: {size}")
print(f"{'mode':<20}" + "".join(f"{d.value:>8}" for d in Decision))
for mode, counts in table.items():
    print(f"{mode.value:<20}" + "".join(f"{counts[d]:>8}" for d in Decision))

# %% [markdown]
# ## The mode order, checked pointwise
#
# For every pair `child ≤ parent` of the partial order, the child's decision is
# never more permissive on any fact combination.

# %%
violations = 0
pairs = 0
for child, parent in itertools.product(Mode, Mode):
    if child is parent or not mode_at_most(child, parent):
        continue
    pairs += 1
    for f in fact_space(child):
        as_parent = resolve(f.model_copy(update={"mode": parent}))
        if DECISION_RANK[resolve(f).decision] > DECISION_RANK[as_parent.decision]:
            violations += 1
print(f"ordered pairs checked: {pairs}; violations: {violations}")
assert violations == 0

# %% [markdown]
# ## Ablation: authority-first rule resolution
#
# Instead of "any deny wins, then any ask, then any allow", let the single
# strongest rule (highest authority, then most recent) decide whatever its
# behaviour. Count how often that would *allow* what deny-first denies.


# %%
def authority_first(facts: Facts) -> Decision:
    base = resolve(facts)
    if base.stage not in (Stage.DENY_RULE, Stage.ASK_RULE, Stage.ALLOW_RULE):
        return base.decision
    strongest = max(facts.rules, key=lambda r: (-AUTHORITY.index(r.source), r.recency))
    if strongest.behavior is RuleBehavior.ALLOW:
        return Decision.ALLOW
    if strongest.behavior is RuleBehavior.ASK:
        return Decision.DENY if facts.mode is Mode.DONT_ASK else Decision.ASK
    return Decision.DENY


loosened = Counter()
for mode in Mode:
    for f in fact_space(mode):
        if DECISION_RANK[authority_first(f)] > DECISION_RANK[resolve(f).decision]:
            loosened[mode] += 1
for mode in Mode:
    print(f"{mode.value:<20} authority-first loosens {loosened[mode]:>6} of {size} decisions")
assert sum(loosened.values()) > 0  # the ablation matters: deny-first is strictly safer
