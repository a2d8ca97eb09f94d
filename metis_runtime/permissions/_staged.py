"""The staged order of permission resolution, over recorded facts alone.

This is the runtime's own implementation of `specs/permissions.md`; it must
not share code with the reference model, so conformance checks compare two
independent readings of the spec. First match wins:

1. transition      a mode change in flight            -> deny
2. plan            mode plan, kind edit or exec       -> deny
3. deny_rule       a matching deny rule               -> deny
4. ask_rule        a matching ask rule                -> ask (dontAsk: deny)
5. bypass_immune   protected path or secret           -> ask (dontAsk: deny), in every mode
6. allow_rule      a matching allow rule              -> allow
7. scope           a path outside the workspace       -> ask (dontAsk: deny)
8. mode            the mode's fallback for the kind

The rule reported at stages 3, 4 and 6 is the one of highest source
authority, then the most recent.
"""

from __future__ import annotations

from collections.abc import Iterable

from metis_trace import AUTHORITY
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Stage
from metis_trace import ToolKind

_HARMLESS = frozenset({ToolKind.READ_ONLY, ToolKind.PLAN_CONTROL})


def strongest(rules: Iterable[RuleRef]) -> RuleRef | None:
    """The rule of highest authority, ties broken by the most recent."""
    return min(rules, key=lambda r: (AUTHORITY.index(r.source), -r.recency), default=None)


def _ask_or_deny(mode: Mode) -> Decision:
    return Decision.DENY if mode is Mode.DONT_ASK else Decision.ASK


def mode_fallback(mode: Mode, kind: ToolKind) -> Decision:
    """Stage 8: what a mode does with a call no earlier stage decided."""
    if mode is Mode.BYPASS:
        return Decision.ALLOW
    if kind in _HARMLESS:
        return Decision.ALLOW
    if mode is Mode.ACCEPT_EDITS:
        return Decision.ALLOW if kind is ToolKind.EDIT else Decision.ASK
    if mode is Mode.DONT_ASK or mode is Mode.PLAN:
        return Decision.DENY  # plan never gets here with edit/exec: stage 2
    return Decision.ASK


def staged_decision(facts: Facts) -> tuple[Decision, Stage, RuleRef | None]:
    """Decide from the facts alone: decision, deciding stage, reported rule."""
    mode = facts.mode
    if facts.transition:
        return Decision.DENY, Stage.TRANSITION, None
    if mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
        return Decision.DENY, Stage.PLAN, None
    deny = strongest(r for r in facts.rules if r.behavior is RuleBehavior.DENY)
    if deny is not None:
        return Decision.DENY, Stage.DENY_RULE, deny
    ask = strongest(r for r in facts.rules if r.behavior is RuleBehavior.ASK)
    if ask is not None:
        return _ask_or_deny(mode), Stage.ASK_RULE, ask
    if facts.protected or facts.secret:
        return _ask_or_deny(mode), Stage.BYPASS_IMMUNE, None
    allow = strongest(r for r in facts.rules if r.behavior is RuleBehavior.ALLOW)
    if allow is not None:
        return Decision.ALLOW, Stage.ALLOW_RULE, allow
    if not facts.in_scope:
        return _ask_or_deny(mode), Stage.SCOPE, None
    return mode_fallback(mode, facts.kind), Stage.MODE, None
