"""metis_model.plan: the plan path's model (specs/plan.md, PLAN-1 ... PLAN-14).

Frameworks and their references, validation against a catalog, the cache
signatures and grounding, consent binding,
and a turn's execution state machine. Pure: the standard library, attrs, and the
schema in `metis_trace`. The turn-log checker is `metis_check.check_turn_log`.
"""

from ._cache import MISS_ORDER, current_signatures, grounded, probe, ungrounded
from ._catalog import (
    Catalog,
    catalog_of,
    executor_signature,
    family_signature,
    plan_executors,
    plan_families,
)
from ._consent import BINDING_FIELDS, action_for, authorizes, destination
from ._effects import effect_counts
from ._exec import (
    EXEC_ABLATIONS,
    Act,
    ActKind,
    ExecState,
    Failure,
    Outcome,
    Slot,
    SlotStatus,
    TurnPhase,
    bad,
    enabled,
    initial_exec,
    observe,
    protocol_step,
)
from ._refs import (
    REQUEST_ORIGIN,
    RUNTIME_KEYS,
    Ref,
    RefKind,
    Resolution,
    ResolveContext,
    batches,
    condition_holds,
    output_origin,
    placeholders,
    resolve_step,
    step_refs,
)
from ._request import canonical_request
from ._validate import CHECKS, effective_cap, failure_keys, validate, validate_tagged

__all__ = [
    "BINDING_FIELDS",
    "CHECKS",
    "EXEC_ABLATIONS",
    "MISS_ORDER",
    "REQUEST_ORIGIN",
    "RUNTIME_KEYS",
    "Act",
    "ActKind",
    "Catalog",
    "ExecState",
    "Failure",
    "Outcome",
    "Ref",
    "RefKind",
    "Resolution",
    "ResolveContext",
    "Slot",
    "SlotStatus",
    "TurnPhase",
    "action_for",
    "authorizes",
    "bad",
    "batches",
    "canonical_request",
    "catalog_of",
    "condition_holds",
    "current_signatures",
    "destination",
    "effect_counts",
    "effective_cap",
    "enabled",
    "executor_signature",
    "failure_keys",
    "family_signature",
    "grounded",
    "initial_exec",
    "observe",
    "output_origin",
    "placeholders",
    "plan_executors",
    "plan_families",
    "probe",
    "protocol_step",
    "resolve_step",
    "step_refs",
    "ungrounded",
    "validate",
    "validate_tagged",
]
