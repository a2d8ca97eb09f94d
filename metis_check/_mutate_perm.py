"""Invalid traces for decisions and the permission order: the mutators of
AUTH-1..4 and PERM-1..6 (specs/permissions.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectStart
from metis_trace import Mode
from metis_trace import Result
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import ToolKind

from ._mutate_base import Events
from ._mutate_base import _batches
from ._mutate_base import _first
from ._mutate_base import _insert_after
from ._mutate_base import _move_after
from ._mutate_base import _replace


def _auth_1(ev: Events, rng: random.Random) -> Events | None:
    denied = _first(ev, lambda e: isinstance(e, Result) and e.status is ResultStatus.DENIED)
    if not isinstance(denied, Result):
        return None
    return _insert_after(ev, denied.seq - 1, EffectStart(seq=0, t=0, occ=denied.occ))


def _auth_2(ev: Events, rng: random.Random) -> Events | None:
    for batch in _batches(ev):
        starts = [s for s in batch if ev[s].kind == "effect_start"]
        if not starts:
            continue
        first = ev[starts[0]]
        assert isinstance(first, EffectStart)
        late = [s for s in batch if isinstance(ev[s], DecisionEvent) and s < first.seq]
        occ = next((ev[s].occ for s in reversed(late) if ev[s].occ != first.occ), None)  # type: ignore[union-attr]
        if occ is None:
            continue
        group = [s for s in batch if s < first.seq and getattr(ev[s], "occ", None) == occ]
        return _move_after(ev, group, first.seq)
    return None


def _decision_with(ev: Events, pred: Callable[[DecisionEvent], bool]) -> DecisionEvent | None:
    found = _first(ev, lambda e: isinstance(e, DecisionEvent) and pred(e))
    return found if isinstance(found, DecisionEvent) else None


def _perm_1(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: True)
    if d is None:
        return None
    return _replace(ev, d.seq, stage="scope" if d.stage == "mode" else "mode")


def _perm_2(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is not Decision.DENY)
    if d is None:
        return None
    deny = RuleRef(behavior=RuleBehavior.DENY, source=Source.PROJECT, pattern="Bash(rm:*)")
    facts = d.facts.model_copy(update={"rules": (*d.facts.rules, deny)})
    return _replace(ev, d.seq, facts=facts)


def _perm_3(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ALLOW)
    if d is None:
        return None
    return _replace(ev, d.seq, facts=d.facts.model_copy(update={"protected": True}))


def _perm_4(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ALLOW)
    if d is None:
        return None
    facts = d.facts.model_copy(update={"mode": Mode.PLAN, "kind": ToolKind.EDIT})
    return _replace(ev, d.seq, facts=facts)


def _perm_5(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ASK)
    if d is None:
        return None
    return _replace(ev, d.seq, facts=d.facts.model_copy(update={"mode": Mode.DONT_ASK}))


def _perm_6(ev: Events, rng: random.Random) -> Events | None:
    d = _decision_with(ev, lambda d: d.decision is Decision.ASK)
    if d is None or not isinstance(ev[d.seq + 1], AskResolved):
        return None
    out = _replace(ev, d.seq, route=Route.HEADLESS)
    return _replace(out, d.seq + 1, resolver="user")


def _auth_3(ev: Events, rng: random.Random) -> Events | None:
    """A call that ran names a tool the header does not list."""
    started = {e.occ for e in ev if isinstance(e, EffectStart)}
    for e in ev:
        if isinstance(e, Assistant) and any(c.occ in started for c in e.calls):
            calls = tuple(
                c.model_copy(update={"tool": "teleport"}) if c.occ in started else c
                for c in e.calls
            )
            return _replace(ev, e.seq, calls=calls)
    return None


def _auth_4(ev: Events, rng: random.Random) -> Events | None:
    """A gate that forgot what the recorded settings give (`SIM_PERMISSIONS`):
    a bash call's input becomes `rm -rf build` (a deny rule its facts lack),
    or, for one judged read-only, `uniq notes.txt out.txt` (it may write),
    or a file call's path a protected one (`.git/config`) or one out of
    scope (`/etc/passwd`), with the footprint the tool would record."""
    last: Assistant | None = None
    options: list[Events] = []
    for e in ev:
        if isinstance(e, Assistant):
            last = e
        if not isinstance(e, DecisionEvent) or last is None:
            continue
        ref = next((c for c in last.calls if c.occ == e.occ), None)
        if ref is None:
            continue
        facts = e.facts
        if ref.tool == "bash" and facts.kind is ToolKind.READ_ONLY:
            # A read-only verdict for a line that writes its output operand.
            options.append(_with_input(ev, last, e, {"command": "uniq notes.txt out.txt"}, None))
        elif ref.tool == "bash" and not any(r.pattern == "Bash(rm:*)" for r in facts.rules):
            options.append(_with_input(ev, last, e, {"command": "rm -rf build"}, None))
        elif ref.tool in ("edit", "write") and not facts.protected:
            options.append(_with_input(ev, last, e, {"path": ".git/config"}, "/ws/.git/config"))
        elif ref.tool == "read" and facts.in_scope:
            options.append(_with_input(ev, last, e, {"path": "/etc/passwd"}, "/etc/passwd"))
        if len(options) >= 3:
            break
    return rng.choice(options) if options else None


def _with_input(
    ev: Events,
    assistant: Assistant,
    decision: DecisionEvent,
    input: dict[str, Any],
    path: str | None,
) -> Events:
    calls = tuple(
        c.model_copy(update={"input": input}) if c.occ == decision.occ else c
        for c in assistant.calls
    )
    out = _replace(ev, assistant.seq, calls=calls)
    if path is None:
        return out
    if decision.facts.kind is ToolKind.READ_ONLY:
        return _replace(out, decision.seq, reads=(path,))
    # the key the tool would record with it: a Queue edit is keyed by its file
    key = f"file:{path}" if decision.cls is CallClass.QUEUE else decision.key
    return _replace(out, decision.seq, writes=(path,), key=key)
