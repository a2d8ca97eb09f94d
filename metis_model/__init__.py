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
    from metis_trace._errors import InputError as InputError
    from metis_trace._errors import MetisModelError as MetisModelError
    from metis_trace._errors import TraceFormatError as TraceFormatError

    from ._agents import GUARD_ORDER as GUARD_ORDER
    from ._agents import Admit as Admit
    from ._agents import GuardLimits as GuardLimits
    from ._agents import GuardState as GuardState
    from ._agents import Refusal as Refusal
    from ._agents import RefusalCode as RefusalCode
    from ._agents import SpawnRequest as SpawnRequest
    from ._agents import admit as admit
    from ._agents import finish as finish
    from ._agents import guard_decision as guard_decision
    from ._agents import normalize_task as normalize_task
    from ._agents import task_hash as task_hash
    from ._children import MODE_CHANGING_TOOLS as MODE_CHANGING_TOOLS
    from ._children import PLAN_LOCKED_REMOVED as PLAN_LOCKED_REMOVED
    from ._children import SPAWNING_TOOLS as SPAWNING_TOOLS
    from ._children import ChildAuthority as ChildAuthority
    from ._children import ChildRefusal as ChildRefusal
    from ._children import child_authority as child_authority
    from ._children import child_surface as child_surface
    from ._children import spawn_violation as spawn_violation
    from ._coverage import exercised as exercised

    # The reference fact-deriver (AUTH-4), for checks that hold settings the
    # trace did not record (explore's Claude Code hook workload).
    from ._derive import Derived as Derived
    from ._derive import Recorded as Recorded
    from ._derive import derive as derive
    from ._derive import parse_recorded_rule as parse_recorded_rule
    from ._enabled import closable as closable
    from ._enabled import settled as settled
    from ._enabled import startable as startable
    from ._invariants import BY_ID as BY_ID
    from ._invariants import FAMILIES as FAMILIES
    from ._invariants import INVARIANTS as INVARIANTS
    from ._invariants import Invariant as Invariant
    from ._invariants import invariant as invariant
    from ._loop import step as step
    from ._loop_state import ENABLED as ENABLED
    from ._loop_state import Call as Call
    from ._loop_state import Divergence as Divergence
    from ._loop_state import LoopState as LoopState
    from ._loop_state import Phase as Phase
    from ._loop_state import initial_state as initial_state
    from ._permissions import DECISION_RANK as DECISION_RANK
    from ._permissions import STAGE_ORDER as STAGE_ORDER
    from ._permissions import Resolution as Resolution
    from ._permissions import Settlement as Settlement
    from ._permissions import mode_at_most as mode_at_most
    from ._permissions import resolve as resolve
    from ._permissions import settle_ask as settle_ask

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__)

from ._moved import deprecated_getattr as _deprecated_getattr  # noqa: E402

__getattr__ = _deprecated_getattr(__name__, __getattr__)
