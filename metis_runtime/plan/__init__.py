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

from ._catalog import BUILTIN
from ._catalog import Catalog
from ._catalog import StepTool
from ._catalog import catalog_for
from ._catalog import describe
from ._commands import cache_listing
from ._commands import check_framework
from ._commands import last_dialog
from ._commands import path_outcomes
from ._commands import plan_runtime
from ._commands import read_framework
from ._commands import record_fired
from ._commands import set_feedback
from ._commands import task_rows
from ._commands import task_turn
from ._manifest import EXECUTORS_DIR
from ._manifest import Manifest
from ._manifest import ManifestTool
from ._manifest import StepError
from ._manifest import load_manifest
from ._manifest import load_manifests
from ._manifest import manifest_digest
from ._manifest import sign_manifest
from ._plan_runtime import PlanRuntime
from ._provider import DEFAULT_SCENARIO
from ._provider import PLAN_SCENARIOS
from ._provider import TurnProvider
from ._provider import provider_name
from ._provider import scenario_path
from ._provider import seed_workspace
from ._routes import explicit_targets
from ._routes import intent_key
from ._routes import match_route
from ._state import Dialog
from ._state import TurnState
from ._state import dialog_path
from ._state import load_dialog
from ._state import load_state
from ._state import turn_log_path
from ._store import PlanStore
from ._store import Task
from ._store import plan_dir
from ._tasks import Schedule
from ._tasks import due_tasks
from ._tasks import new_task
from ._tasks import next_due
from ._tasks import parse_schedule
from ._turn_types import Coordinates
from ._turn_types import TurnOptions
from ._turn_types import TurnOutcome

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
