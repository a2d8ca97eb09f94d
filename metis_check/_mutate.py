"""Traces broken on purpose: one edit per invariant ID.

Each mutator takes a valid trace and returns a copy in which the named
invariant is the first to fail, or None when the trace lacks what the edit
needs (say, no Queue calls sharing a key). `broken_trace` searches simulated
runs for one that can be broken.

Here is the table of them, `MUTATORS`, keyed by invariant ID, and the entry
points. The mutators live by family, in the order specs/ presents the
mechanisms: `_mutate_loop.py` (TRACE-1, LOOP, RETRY), `_mutate_sched.py`
(SCHED), `_mutate_close.py` (CLOSE), `_mutate_perm.py` (AUTH, PERM),
`_mutate_child.py` (CHILD); the edits they share, `_mutate_base.py`.
"""

from __future__ import annotations

import random

from metis_trace import TraceHeader

from ._generate import simulate
from ._mutate_base import Events
from ._mutate_base import Mutator
from ._mutate_child import _child_1
from ._mutate_child import _child_2
from ._mutate_child import _child_3
from ._mutate_child import _child_6
from ._mutate_close import _close_1
from ._mutate_close import _close_2
from ._mutate_close import _close_3
from ._mutate_close import _close_4
from ._mutate_close import _close_5
from ._mutate_close import _close_6
from ._mutate_close import _close_8
from ._mutate_loop import _loop_1
from ._mutate_loop import _loop_2
from ._mutate_loop import _retry_1
from ._mutate_loop import _retry_2
from ._mutate_loop import _retry_3
from ._mutate_loop import _retry_4
from ._mutate_loop import _trace_1
from ._mutate_perm import _auth_1
from ._mutate_perm import _auth_2
from ._mutate_perm import _auth_3
from ._mutate_perm import _auth_4
from ._mutate_perm import _perm_1
from ._mutate_perm import _perm_2
from ._mutate_perm import _perm_3
from ._mutate_perm import _perm_4
from ._mutate_perm import _perm_5
from ._mutate_perm import _perm_6
from ._mutate_sched import SCHED_2_CLAUSES
from ._mutate_sched import SCHED_5_CLAUSES
from ._mutate_sched import _sched_1
from ._mutate_sched import _sched_3
from ._mutate_sched import _sched_4
from ._mutate_sched import _sched_6
from ._sim_config import SimConfig

__all__ = ["MUTATORS", "RICH", "break_trace", "broken_trace"]


def _one_of(clauses: dict[str, Mutator]) -> Mutator:
    """An invariant's mutator that breaks one of its clauses, tried in a
    random order until one applies."""

    def mutate(ev: Events, rng: random.Random) -> Events | None:
        names = list(clauses)
        rng.shuffle(names)
        for name in names:
            broken = clauses[name](ev, rng)
            if broken is not None:
                return broken
        return None

    return mutate


MUTATORS: dict[str, Mutator] = {
    "TRACE-1": _trace_1,
    "LOOP-1": _loop_1,
    "LOOP-2": _loop_2,
    "AUTH-1": _auth_1,
    "AUTH-2": _auth_2,
    "AUTH-3": _auth_3,
    "AUTH-4": _auth_4,
    "PERM-1": _perm_1,
    "PERM-2": _perm_2,
    "PERM-3": _perm_3,
    "PERM-4": _perm_4,
    "PERM-5": _perm_5,
    "PERM-6": _perm_6,
    "CLOSE-1": _close_1,
    "CLOSE-2": _close_2,
    "CLOSE-3": _close_3,
    "CLOSE-4": _close_4,
    "CLOSE-5": _close_5,
    "CLOSE-6": _close_6,
    "CLOSE-8": _close_8,
    "SCHED-1": _sched_1,
    "SCHED-2": _one_of(SCHED_2_CLAUSES),
    "SCHED-3": _sched_3,
    "SCHED-4": _sched_4,
    "SCHED-5": _one_of(SCHED_5_CLAUSES),
    "SCHED-6": _sched_6,
    "CHILD-1": _child_1,
    "CHILD-2": _child_2,
    "CHILD-3": _child_3,
    "CHILD-6": _child_6,
    "RETRY-1": _retry_1,
    "RETRY-2": _retry_2,
    "RETRY-3": _retry_3,
    "RETRY-4": _retry_4,
}


# A run rich in the features the mutators need.
RICH = SimConfig(
    turns=6,
    max_batch=6,
    p_interrupt=0.25,
    p_cancel=0.15,
    p_background=0.4,
    p_rules=0.5,
    queue_keys=1,
)


def break_trace(events: Events, invariant_id: str, rng: random.Random) -> Events | None:
    """Edit a valid trace so that `invariant_id` is broken; None if it can't be."""
    return MUTATORS[invariant_id](list(events), rng)


def broken_trace(
    invariant_id: str, seed: int = 0, attempts: int = 400
) -> tuple[TraceHeader, Events]:
    """The first simulated run from `seed` on that can be broken for the ID."""
    for s in range(seed, seed + attempts):
        header, events = simulate(s, RICH)
        broken = break_trace(events, invariant_id, random.Random(s))
        if broken is not None:
            return header, broken
    raise LookupError(f"no simulated run in {attempts} could be broken for {invariant_id}")
