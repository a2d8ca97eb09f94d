"""metis_model: the specification of a tool-using agent runtime, executable.

Read it top to bottom, in the order `specs/` presents the mechanisms; each
module states its invariants by their stable IDs (`metis spec` lists them):

1. `_invariants.py`: the registry, every ID with its statement (specs/*.md).
2. The agent loop (LOOP, RETRY; specs/loop.md): `_loop_state.py`, its phases,
   the events each enables, call occurrences and the state; `_loop.py`, `step`
   and the turn's own events, and which module checks each event kind.
3. The four-class scheduler, Safe / Queue / Exclusive / Background (SCHED;
   specs/scheduler.md): `_scheduler.py`, effects starting, committing and
   ending, background jobs; `_interference.py`, which calls may run together
   (classes, queue keys, footprints); `_causes.py`, a cancel's causes.
4. Terminal-result closure (CLOSE; specs/closure.md): `_closure.py`, results,
   the results message and cancels; `_resume.py`, interruption, resume and
   repair (RETRY-2..4).
5. `_decisions.py`, `_permissions.py`: hooks and decisions at a call, the
   staged permission order and the five-mode order (AUTH, PERM, CHILD-6;
   specs/permissions.md); `_derive.py`, the reference fact-deriver (AUTH-4).
6. `_context.py` (public face `context`): context control and compaction
   (CLOSE-6..8).
7. `_children.py`, `_agents.py`: a child's surface, its cloned gate and the plan
   lock; the spawn guard (CHILD; specs/children.md).
8. `_coverage.py`, what an event puts to the test (specs/trace-format.md,
   "Coverage"); `_enabled.py`, what may happen next in a state.
9. `plan/`: the plan path's model (PLAN; specs/plan.md).

It imports only the standard library, attrs, pydantic and `metis_trace` (the
event types). Checking traces against it lives in `metis_check`, the z3
encodings in `metis_proofs`.

Names that used to live here (`check_trace`, `simulate`, `Report`, ...) still
resolve, with a DeprecationWarning naming their new home (`_moved.py`).
Exports load lazily (PEP 562, see `metis_trace/_lazy.py`).
"""

import typing as _typing

from metis_trace._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from metis_trace._errors import InputError
    from metis_trace._errors import MetisModelError
    from metis_trace._errors import TraceFormatError

    from ._agents import GUARD_ORDER
    from ._agents import Admit
    from ._agents import GuardLimits
    from ._agents import GuardState
    from ._agents import Refusal
    from ._agents import RefusalCode
    from ._agents import SpawnRequest
    from ._agents import admit
    from ._agents import finish
    from ._agents import guard_decision
    from ._agents import normalize_task
    from ._agents import task_hash
    from ._children import MODE_CHANGING_TOOLS
    from ._children import PLAN_LOCKED_REMOVED
    from ._children import SPAWNING_TOOLS
    from ._children import ChildAuthority
    from ._children import ChildRefusal
    from ._children import child_authority
    from ._children import child_surface
    from ._children import spawn_violation
    from ._coverage import exercised
    from ._derive import Derived
    from ._derive import Recorded
    from ._derive import derive
    from ._derive import parse_recorded_rule
    from ._enabled import closable
    from ._enabled import settled
    from ._enabled import startable
    from ._invariants import BY_ID
    from ._invariants import FAMILIES
    from ._invariants import INVARIANTS
    from ._invariants import Invariant
    from ._invariants import invariant
    from ._loop import step
    from ._loop_state import ENABLED
    from ._loop_state import Call
    from ._loop_state import Divergence
    from ._loop_state import LoopState
    from ._loop_state import Phase
    from ._loop_state import initial_state
    from ._permissions import DECISION_RANK
    from ._permissions import STAGE_ORDER
    from ._permissions import Resolution
    from ._permissions import Settlement
    from ._permissions import mode_at_most
    from ._permissions import resolve
    from ._permissions import settle_ask

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._invariants": (
        "BY_ID",
        "FAMILIES",
        "INVARIANTS",
        "Invariant",
        "invariant",
    ),
    "._loop_state": (
        "Call",
        "Divergence",
        "ENABLED",
        "LoopState",
        "Phase",
        "initial_state",
    ),
    "._loop": ("step",),
    "._coverage": ("exercised",),
    "._enabled": ("closable", "settled", "startable"),
    "._permissions": (
        "DECISION_RANK",
        "Resolution",
        "STAGE_ORDER",
        "Settlement",
        "mode_at_most",
        "resolve",
        "settle_ask",
    ),
    "._children": (
        "ChildAuthority",
        "ChildRefusal",
        "MODE_CHANGING_TOOLS",
        "PLAN_LOCKED_REMOVED",
        "SPAWNING_TOOLS",
        "child_authority",
        "child_surface",
        "spawn_violation",
    ),
    "._agents": (
        "Admit",
        "GUARD_ORDER",
        "GuardLimits",
        "GuardState",
        "Refusal",
        "RefusalCode",
        "SpawnRequest",
        "admit",
        "finish",
        "guard_decision",
        "normalize_task",
        "task_hash",
    ),
    # The reference fact-deriver (AUTH-4), for checks that hold settings the
    # trace did not record (explore's Claude Code hook workload).
    "._derive": ("Derived", "Recorded", "derive", "parse_recorded_rule"),
    "metis_trace._errors": (
        "InputError",
        "MetisModelError",
        "TraceFormatError",
    ),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

from ._moved import deprecated_getattr as _deprecated_getattr  # noqa: E402

__getattr__ = _deprecated_getattr(__name__, __getattr__)

__all__ = [
    "BY_ID",
    "DECISION_RANK",
    "ENABLED",
    "FAMILIES",
    "GUARD_ORDER",
    "INVARIANTS",
    "MODE_CHANGING_TOOLS",
    "PLAN_LOCKED_REMOVED",
    "SPAWNING_TOOLS",
    "STAGE_ORDER",
    "Admit",
    "Call",
    "ChildAuthority",
    "ChildRefusal",
    "Derived",
    "Divergence",
    "GuardLimits",
    "GuardState",
    "InputError",
    "Invariant",
    "LoopState",
    "MetisModelError",
    "Phase",
    "Recorded",
    "Refusal",
    "RefusalCode",
    "Resolution",
    "Settlement",
    "SpawnRequest",
    "TraceFormatError",
    "admit",
    "child_authority",
    "child_surface",
    "closable",
    "derive",
    "exercised",
    "finish",
    "guard_decision",
    "initial_state",
    "invariant",
    "mode_at_most",
    "normalize_task",
    "parse_recorded_rule",
    "resolve",
    "settle_ask",
    "settled",
    "spawn_violation",
    "startable",
    "step",
    "task_hash",
]
