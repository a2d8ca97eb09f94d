"""metis_model: the pure reference model of a tool-using agent runtime.

Read it as the specification: `specs/` states each invariant by ID, and this
package is the executable form. It imports only the standard library, attrs
and pydantic (for the trace schema).

Exports load lazily (PEP 562, see `_lazy.py`): `import metis_model.transcripts`
does not load the loop model or the trace schema.
"""

import typing as _typing

from ._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._agents import (
        GUARD_ORDER,
        Admit,
        GuardLimits,
        GuardState,
        Refusal,
        RefusalCode,
        SpawnRequest,
        admit,
        check_trace_tree,
        finish,
        guard_decision,
        normalize_task,
        task_hash,
    )
    from ._check import ALWAYS_BY_KIND, check_trace
    from ._children import (
        MODE_CHANGING_TOOLS,
        PLAN_LOCKED_REMOVED,
        SPAWNING_TOOLS,
        ChildAuthority,
        ChildRefusal,
        child_authority,
        child_surface,
        spawn_violation,
    )
    from ._coverage import TRANSITIONS, Coverage
    from ._errors import InputError, MetisModelError, TraceFormatError
    from ._generate import ALL_TOOLS, SimConfig, simulate
    from ._invariants import BY_ID, FAMILIES, INVARIANTS, Invariant, invariant
    from ._loop import (
        ENABLED,
        Call,
        Divergence,
        LoopState,
        Phase,
        closable,
        exercised,
        initial_state,
        settled,
        startable,
        step,
    )
    from ._mutate import MUTATORS, break_trace, broken_trace
    from ._permissions import (
        DECISION_RANK,
        STAGE_ORDER,
        Resolution,
        Settlement,
        mode_at_most,
        resolve,
        settle_ask,
    )
    from ._report import STATUSES, Note, Report, Undecided, Verdict, Violation
    from ._run_files import canary_forms, check_run_files, scan_text
    from ._witness import WitnessedTrace, WitnessReport, check_witness

_EXPORTS = {
    "._agents": (
        "GUARD_ORDER",
        "Admit",
        "GuardLimits",
        "GuardState",
        "Refusal",
        "RefusalCode",
        "SpawnRequest",
        "admit",
        "check_trace_tree",
        "finish",
        "guard_decision",
        "normalize_task",
        "task_hash",
    ),
    "._check": (
        "ALWAYS_BY_KIND",
        "check_trace",
    ),
    "._coverage": (
        "TRANSITIONS",
        "Coverage",
    ),
    "._children": (
        "MODE_CHANGING_TOOLS",
        "PLAN_LOCKED_REMOVED",
        "SPAWNING_TOOLS",
        "ChildAuthority",
        "ChildRefusal",
        "child_authority",
        "child_surface",
        "spawn_violation",
    ),
    "._errors": (
        "InputError",
        "MetisModelError",
        "TraceFormatError",
    ),
    "._generate": (
        "ALL_TOOLS",
        "SimConfig",
        "simulate",
    ),
    "._invariants": (
        "BY_ID",
        "FAMILIES",
        "INVARIANTS",
        "Invariant",
        "invariant",
    ),
    "._loop": (
        "ENABLED",
        "Call",
        "Divergence",
        "LoopState",
        "Phase",
        "closable",
        "exercised",
        "initial_state",
        "settled",
        "startable",
        "step",
    ),
    "._mutate": (
        "MUTATORS",
        "break_trace",
        "broken_trace",
    ),
    "._permissions": (
        "DECISION_RANK",
        "STAGE_ORDER",
        "Resolution",
        "Settlement",
        "mode_at_most",
        "resolve",
        "settle_ask",
    ),
    "._report": (
        "STATUSES",
        "Note",
        "Report",
        "Undecided",
        "Verdict",
        "Violation",
    ),
    "._run_files": (
        "canary_forms",
        "check_run_files",
        "scan_text",
    ),
    "._witness": (
        "WitnessReport",
        "WitnessedTrace",
        "check_witness",
    ),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ALL_TOOLS",
    "ALWAYS_BY_KIND",
    "BY_ID",
    "DECISION_RANK",
    "ENABLED",
    "FAMILIES",
    "GUARD_ORDER",
    "INVARIANTS",
    "MODE_CHANGING_TOOLS",
    "MUTATORS",
    "PLAN_LOCKED_REMOVED",
    "SPAWNING_TOOLS",
    "STAGE_ORDER",
    "STATUSES",
    "TRANSITIONS",
    "Admit",
    "Call",
    "ChildAuthority",
    "ChildRefusal",
    "Coverage",
    "Divergence",
    "GuardLimits",
    "GuardState",
    "InputError",
    "Invariant",
    "LoopState",
    "MetisModelError",
    "Note",
    "Phase",
    "Refusal",
    "RefusalCode",
    "Report",
    "Resolution",
    "Settlement",
    "SimConfig",
    "SpawnRequest",
    "TraceFormatError",
    "Undecided",
    "Verdict",
    "Violation",
    "WitnessReport",
    "WitnessedTrace",
    "admit",
    "break_trace",
    "broken_trace",
    "canary_forms",
    "check_run_files",
    "check_trace",
    "check_trace_tree",
    "check_witness",
    "child_authority",
    "child_surface",
    "closable",
    "exercised",
    "finish",
    "guard_decision",
    "initial_state",
    "invariant",
    "mode_at_most",
    "normalize_task",
    "resolve",
    "scan_text",
    "settle_ask",
    "settled",
    "simulate",
    "spawn_violation",
    "startable",
    "step",
    "task_hash",
]
