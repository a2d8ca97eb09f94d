"""metis_model.plan: the plan path's model (specs/plan.md, PLAN-1 ... PLAN-14).

Frameworks and their references, validation against a catalog, the cache
signatures and grounding, consent binding,
and a turn's execution state machine. Pure: the standard library, attrs, and the
schema in `metis_trace`. The turn-log checker is `metis_check.check_turn_log`.
"""

from ._cache import MISS_ORDER
from ._cache import current_signatures
from ._cache import grounded
from ._cache import probe
from ._cache import ungrounded
from ._catalog import Catalog
from ._catalog import catalog_of
from ._catalog import executor_signature
from ._catalog import family_signature
from ._catalog import plan_executors
from ._catalog import plan_families
from ._consent import BINDING_FIELDS
from ._consent import action_for
from ._consent import authorizes
from ._consent import destination
from ._effects import effect_counts
from ._exec import EXEC_ABLATIONS
from ._exec import Act
from ._exec import ActKind
from ._exec import ExecState
from ._exec import Failure
from ._exec import Outcome
from ._exec import Slot
from ._exec import SlotStatus
from ._exec import TurnPhase
from ._exec import bad
from ._exec import enabled
from ._exec import initial_exec
from ._exec import observe
from ._exec import protocol_step
from ._refs import REQUEST_ORIGIN
from ._refs import RUNTIME_KEYS
from ._refs import Ref
from ._refs import RefKind
from ._refs import Resolution
from ._refs import ResolveContext
from ._refs import batches
from ._refs import condition_holds
from ._refs import output_origin
from ._refs import placeholders
from ._refs import resolve_step
from ._refs import step_refs
from ._request import canonical_request
from ._validate import CHECKS
from ._validate import effective_cap
from ._validate import failure_keys
from ._validate import validate
from ._validate import validate_tagged

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
