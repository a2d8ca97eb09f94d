"""What a plan turn leaves on disk: the turn log, its state, dialogs, traces.

Under `<workspace>/.metis/plan/` (folders 0700, files 0600):

- `turns/<turn>.jsonl`: the turn log (specs/plan.md), appended by every
  process that works on the turn, each line redacted like the trace;
- `turns/<turn>/trace-<segment>.jsonl`: the event-graph trace of each segment
  (one per process), which `metis conform` replays and cross-checks;
- `turns/<turn>/state.json`: the turn's structured state (the framework, the
  done steps' outputs and origins, what committed, filler values, counters),
  from which a resumed turn rebuilds its done state;
- `turns/<turn>/undo/`: the files its mutations changed, as they were before;
- `dialogs/<dialog>.json`: a paused turn's dialog: owner, channel,
  conversation, the pending action (bound: executor, arguments digest,
  destination) or the missing inputs, and the admitted callback.

A dialog or state file that is malformed is a `ConfigError` naming the file
and field (one line).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from metis_trace import Action
from metis_trace import Framework
from metis_trace import InputError
from metis_trace import PauseKind
from metis_trace import TurnHeader
from metis_trace import model_strict

from .._errors import ConfigError
from .._input import read_input_text
from .._redact import Redactor
from .._trace import _announce
from ..tools import atomic_write
from ._store import plan_dir
from ._store import private_dir

DIALOG_FORMAT = "metis-dialog"
CALLBACK = "plan.resume"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Dialog(_Model):
    format: Literal["metis-dialog"] = "metis-dialog"
    version: Literal[1] = 1
    id: str
    turn_id: str
    owner: str
    channel: str
    conversation: str
    reason: PauseKind
    step: int
    pending: Action | None = None
    missing: tuple[str, ...] = ()
    prompt: str = ""
    callback: Literal["plan.resume"] = "plan.resume"
    created_at: str
    answered: bool = False


class DoneStep(_Model):
    status: str
    output: Any = None
    origin: str = "request"
    committed: bool = False
    tool: str
    effect: str


class TurnState(BaseModel):
    """The structured state of a turn between processes (changed as it runs)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["metis-plan-state"] = "metis-plan-state"
    version: Literal[1] = 1
    header: TurnHeader
    path: str
    framework: Framework
    attempt: int
    recoveries: int
    done: dict[str, DoneStep] = Field(default_factory=dict)  # step number -> result
    committed: list[dict[str, Any]] = Field(default_factory=list)  # every committed step
    inputs: dict[str, str] = Field(default_factory=dict)
    segment: int
    dialog: str | None = None
    claims: list[int] = Field(default_factory=list)
    hit: dict[str, Any] | None = None  # the cache entry a hit came from


def turns_dir(workspace: Path) -> Path:
    return private_dir(plan_dir(workspace) / "turns")


def turn_dir(workspace: Path, turn_id: str) -> Path:
    return private_dir(turns_dir(workspace) / turn_id)


def turn_log_path(workspace: Path, turn_id: str) -> Path:
    return turns_dir(workspace) / f"{turn_id}.jsonl"


def dialogs_dir(workspace: Path) -> Path:
    return private_dir(plan_dir(workspace) / "dialogs")


def _write_json(path: Path, value: Any) -> None:
    # ASCII JSON, as `write_private_json` writes: a lone surrogate the strict
    # reader kept (`\ud800` in a dialog file) is escaped, not an encoding error.
    atomic_write(path, (json.dumps(value, indent=1) + "\n").encode(), 0o600)


def _read_model(model: type[Any], path: Path) -> Any:
    try:
        return model_strict(model, read_input_text(path), source=str(path))
    except InputError as exc:
        raise ConfigError(exc.describe(str(path))) from exc


def save_state(workspace: Path, state: TurnState) -> None:
    _write_json(
        turn_dir(workspace, state.header.turn_id) / "state.json", state.model_dump(mode="json")
    )


def load_state(workspace: Path, turn_id: str) -> TurnState:
    path = turns_dir(workspace) / turn_id / "state.json"
    result: TurnState = _read_model(TurnState, path)
    return result


def save_dialog(workspace: Path, dialog: Dialog) -> Path:
    path = dialogs_dir(workspace) / f"{dialog.id}.json"
    _write_json(path, dialog.model_dump(mode="json"))
    return path


def dialog_path(workspace: Path, dialog: str) -> Path:
    """A dialog named by id (in the workspace) or by its file."""
    given = Path(dialog)
    if given.suffix == ".json" and (given.exists() or os.sep in dialog):
        return given
    return dialogs_dir(workspace) / f"{dialog}.json"


def load_dialog(path: Path) -> Dialog:
    result: Dialog = _read_model(Dialog, path)
    if path.stem != result.id:
        raise ConfigError(f"{path}: id: {result.id!r} is not the dialog this file names")
    return result


class TurnLogWriter:
    """Appends records to a turn log: one whole, redacted JSON line each."""

    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _announce(path)  # the pytest plugin checks it (PLAN-*), as it does traces

    def write(self, record: BaseModel) -> None:
        line = self.redactor.json_line(record.model_dump(mode="json")) + "\n"
        os.write(self._fd, line.encode("ascii"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> TurnLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
