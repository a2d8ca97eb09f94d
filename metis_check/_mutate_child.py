"""Invalid traces for children and hooks: the mutators of CHILD-1..3 and
CHILD-6 (specs/children.md). CHILD-4 and CHILD-5 have no per-trace mutator.
"""

from __future__ import annotations

import random
from typing import Any

from metis_trace import Decision
from metis_trace import HookRun
from metis_trace import Mode
from metis_trace import Spawn

from ._mutate_base import Events
from ._mutate_base import _decisions
from ._mutate_base import _first
from ._mutate_base import _insert_after
from ._mutate_base import _renumber
from ._mutate_base import _tagged


def _spawn_after_assistant(ev: Events, **fields: Any) -> Events | None:
    a = _first(ev, lambda e: e.kind == "assistant" and bool(e.calls))
    if a is None:
        return None
    return _insert_after(ev, a.seq, Spawn(seq=0, t=0, agent_id="child-x", **fields))


def _child_1(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.DEFAULT,
        child_tools=("read", "root_shell"),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "bash"),
    )


def _child_2(ev: Events, rng: random.Random) -> Events | None:
    # A child more permissive than its parent; or (mutant 21) a child that
    # asked for more than its parent's mode and was started anyway (its gate
    # capped it), or one that asked for plan and runs in default.
    child, requested = rng.choice(
        [(Mode.BYPASS, None), (Mode.DEFAULT, Mode.BYPASS), (Mode.DEFAULT, Mode.PLAN)]
    )
    return _spawn_after_assistant(
        ev,
        child_mode=child,
        child_tools=("read",),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "bash"),
        requested_mode=requested,
    )


def _child_3(ev: Events, rng: random.Random) -> Events | None:
    return _spawn_after_assistant(
        ev,
        child_mode=Mode.DEFAULT,
        child_tools=("read",),
        parent_mode=Mode.PLAN,
        parent_tools=("read", "bash"),
    )


def _child_6(ev: Events, rng: random.Random) -> Events | None:
    """A hook that should have run before a decision did not (its event dropped)."""
    decided = _decisions(ev)
    for e in ev:
        if isinstance(e, HookRun) and not e.vetoed and decided[e.occ].decision is not Decision.DENY:
            return _renumber([x for x in _tagged(ev) if x[0] != e.seq])
    return None
