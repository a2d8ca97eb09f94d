"""The plan path (specs/plan.md): typed frameworks run through the same mediation.

- `_manifest`: executors declared by signed manifests, run as `ManifestTool`s;
- `_catalog`: the catalog over the agent loop's registry (one registry);
- `_rules`: validation, resolution, batching, grounding, signatures and
  consent binding, as the runtime applies them (apart from the model);
- `_store`: the SQLite plan store (cache entries, turns, tasks, the epoch);
- `_state`: turn logs, turn state and dialogs on disk;
- `_engine`: the provider's proposals (structured output);
- `_driver`: a plan segment as provider and observer of the agent loop;
- `_plan_runtime`: `PlanRuntime`, a turn from request to answer, and resumption;
- `_turn`: `TurnRun`, one segment's working state; `_turn_types`: its records;
- `_routes`, `_undo`, `_tasks`: deterministic routes, undo, scheduled tasks;
- `_provider`, `_commands`: what `metis plan` / `metis tasks` do (a turn's
  provider, replay position and seeding; validation of a framework file,
  dialogs, feedback, the cache and task listings, fired tasks).
"""

from ._catalog import BUILTIN, Catalog, StepTool, catalog_for, describe
from ._commands import (
    cache_listing,
    check_framework,
    last_dialog,
    path_outcomes,
    plan_runtime,
    read_framework,
    record_fired,
    set_feedback,
    task_rows,
    task_turn,
)
from ._manifest import (
    EXECUTORS_DIR,
    Manifest,
    ManifestTool,
    StepError,
    load_manifest,
    load_manifests,
    manifest_digest,
    sign_manifest,
)
from ._plan_runtime import PlanRuntime
from ._provider import (
    DEFAULT_SCENARIO,
    PLAN_SCENARIOS,
    TurnProvider,
    provider_name,
    scenario_path,
    seed_workspace,
)
from ._routes import explicit_targets, intent_key, match_route
from ._state import Dialog, TurnState, dialog_path, load_dialog, load_state, turn_log_path
from ._store import PlanStore, Task, plan_dir
from ._tasks import Schedule, due_tasks, new_task, next_due, parse_schedule
from ._turn_types import Coordinates, TurnOptions, TurnOutcome

__all__ = [
    "BUILTIN",
    "DEFAULT_SCENARIO",
    "EXECUTORS_DIR",
    "PLAN_SCENARIOS",
    "Catalog",
    "Coordinates",
    "Dialog",
    "Manifest",
    "ManifestTool",
    "PlanRuntime",
    "PlanStore",
    "Schedule",
    "StepError",
    "StepTool",
    "Task",
    "TurnOptions",
    "TurnOutcome",
    "TurnProvider",
    "TurnState",
    "cache_listing",
    "catalog_for",
    "check_framework",
    "describe",
    "dialog_path",
    "due_tasks",
    "explicit_targets",
    "intent_key",
    "last_dialog",
    "load_dialog",
    "load_manifest",
    "load_manifests",
    "load_state",
    "manifest_digest",
    "match_route",
    "new_task",
    "next_due",
    "parse_schedule",
    "path_outcomes",
    "plan_dir",
    "plan_runtime",
    "provider_name",
    "read_framework",
    "record_fired",
    "scenario_path",
    "seed_workspace",
    "set_feedback",
    "sign_manifest",
    "task_rows",
    "task_turn",
    "turn_log_path",
]
