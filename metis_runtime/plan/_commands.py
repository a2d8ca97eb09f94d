"""What `metis plan` and `metis tasks` do, apart from parsing and printing.

Each function takes what the command line gave (a workspace, a file, an
owner) and returns values; bad input is a `ConfigError` (a
`MetisRuntimeError`) whose message names the place, so the CLI prints one
line and exits 2. The turn's provider is in `_provider.py`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_trace import Framework
from metis_trace import InputError
from metis_trace import Mode
from metis_trace import Route
from metis_trace import TaskRef
from metis_trace import ValidationFailure
from metis_trace import parse_framework

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from ._catalog import Catalog
from ._catalog import catalog_for
from ._plan_runtime import PlanRuntime
from ._rules import validate
from ._state import dialogs_dir
from ._state import load_dialog
from ._store import PlanStore
from ._store import Task
from ._tasks import next_due
from ._turn_types import Coordinates
from ._turn_types import TurnOptions
from ._turn_types import TurnOutcome

__all__ = [
    "cache_listing",
    "check_framework",
    "last_dialog",
    "path_outcomes",
    "plan_runtime",
    "read_framework",
    "record_fired",
    "set_feedback",
    "task_rows",
    "task_turn",
]


def plan_runtime(
    workspace: Path, provider: Any, settings: Sequence[str], *, serial: bool
) -> PlanRuntime:
    """A plan runtime over the workspace's registry, with a headless gate
    (asks are denied) from the permission settings files."""
    from metis_trace import Decision
    from metis_trace import Source

    from ..agents import tool_env
    from ..permissions import Gate
    from ..permissions import Policy
    from ..tools import ToolRegistry

    policy = Policy()
    for path in settings:
        policy.load(path, Source.CLI)

    def gate_for(mode: Mode, route: Route) -> Any:
        return Gate(policy, mode, workspace, route, headless_default=Decision.DENY)

    return PlanRuntime(
        workspace, ToolRegistry.load(), gate_for, provider=provider, env=tool_env(), serial=serial
    )


def read_framework(file: Path) -> Framework:
    """A framework file, JSON (by its suffix) or YAML, strictly read."""
    from metis_trace import decode_json

    from .._input import decode_text
    from .._input import read_input_bytes
    from .._yaml import load_yaml

    try:
        text = decode_text(read_input_bytes(file), str(file))
        data = (
            decode_json(text, source=str(file))
            if file.suffix == ".json"
            else load_yaml(text, source=str(file))
        )
    except InputError as exc:
        raise ConfigError(exc.describe(str(file))) from exc
    try:
        return parse_framework(data, source=str(file))
    except ValueError as exc:
        raise ConfigError(f"{file}: {exc}") from exc


def check_framework(
    framework: Framework, workspace: Path, cap: int
) -> tuple[list[ValidationFailure], Catalog]:
    """The framework's validation failures against the workspace's catalog,
    and the catalog (its `problems` are the manifests it refused)."""
    from ..tools import ToolRegistry

    catalog = catalog_for(workspace, ToolRegistry.load())
    return validate(framework, catalog.infos, cap), catalog


def last_dialog(workspace: Path, owner: str) -> Path:
    """The newest unanswered dialog of `owner` in the workspace."""
    best: tuple[str, Path] | None = None
    for path in sorted(dialogs_dir(workspace).glob("*.json")):
        try:
            d = load_dialog(path)
        except MetisRuntimeError:
            continue
        if d.owner == owner and not d.answered and (best is None or d.created_at >= best[0]):
            best = (d.created_at, path)
    if best is None:
        raise ConfigError(f"{workspace}: no dialog of {owner} is waiting for an answer")
    return best[1]


def path_outcomes(outcome: TurnOutcome) -> list[str]:
    """What each path said (hit, miss and why), from the turn log; none when
    the log cannot be read."""
    from metis_trace import PathRecord
    from metis_trace import read_turn_log

    try:
        _, records, _ = read_turn_log(Path(outcome.turn_log).read_text().splitlines())
    except (OSError, InputError):
        return []
    lines = []
    for r in records:
        if isinstance(r, PathRecord):
            why = f" ({r.reason.value})" if r.reason else ""
            lines.append(f"path {r.path.value}: {r.outcome.value}{why}")
    return lines


def set_feedback(workspace: Path, turn: str, good: bool) -> str:
    """Make the turn's L1 shadow plan its cluster's champion (or demote it);
    the cluster's key."""
    with PlanStore(workspace) as store:
        row = store.turn(turn)
        if row is None:
            raise ConfigError(f"{workspace}: no finished turn {turn!r}")
        key: str = row["intent"]
        if not store.set_champion(key, good):
            raise ConfigError(f"turn {turn}: its cluster {key!r} has no L1 plan")
    return key


def cache_listing(
    workspace: Path, bump_epoch: bool
) -> tuple[int | None, int, list[dict[str, Any]]]:
    """The new epoch (when bumped), the routing epoch and the cache's entries."""
    with PlanStore(workspace) as store:
        bumped = store.bump_epoch() if bump_epoch else None
        rows = [
            {
                "path": p.path,
                "key": p.key,
                "steps": len(p.framework.steps),
                "champion": p.champion,
                "runs": p.runs,
                "epoch": p.signatures.epoch,
                "executors": p.signatures.executors,
                "registered_by": p.registered_by,
            }
            for p in store.plans()
        ]
        return bumped, store.epoch, rows


def task_rows(workspace: Path, owner: str | None) -> list[dict[str, Any]]:
    """The tasks (of `owner`, or all), their next run and their outcome history."""
    with PlanStore(workspace) as store:
        return [
            {
                "id": t.id,
                "owner": t.owner,
                "channel": t.channel,
                "mode": t.mode,
                "schedule": t.schedule,
                "command": t.command,
                "next": next_due(t).isoformat(),
                "runs": [{"turn": r[0], "at": r[1], "outcome": r[2]} for r in store.runs(t.id)],
            }
            for t in store.tasks(owner)
        ]


def task_turn(task: Task, live: bool) -> tuple[Coordinates, TurnOptions]:
    """A due task as a new background turn of its owner, with the task's own
    authority (mode, channel), whoever runs it."""
    options = TurnOptions(
        mode=Mode(task.mode),
        route=Route.BACKGROUND,
        task=TaskRef(id=task.id, owner=task.owner, channel=task.channel, mode=Mode(task.mode)),
        live=live,
    )
    return Coordinates(task.owner, "scheduler", task.channel, task.conversation), options


def record_fired(workspace: Path, task: Task, outcome: TurnOutcome, now: dt.datetime) -> str:
    """Record that the task fired at `now`; the outcome as its history shows it."""
    with PlanStore(workspace) as store:
        state = outcome.state + (f" (dialog {outcome.dialog})" if outcome.dialog else "")
        store.fired(task.id, outcome.turn_id, now.isoformat(), state)
    return state
