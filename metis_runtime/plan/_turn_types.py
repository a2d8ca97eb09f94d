"""The records of a plan turn (specs/plan.md): who asks (`Coordinates`), how
(`TurnOptions`), and what a segment ends with (`TurnOutcome`); with the clock
and the finished step statuses that `TurnRun` and `PlanRuntime` share.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

import attrs

from metis_trace import Mode
from metis_trace import Route
from metis_trace import TaskRef

_FINISHED = ("ok", "skipped_empty", "skipped_condition")


@attrs.frozen
class Coordinates:
    owner: str
    actor: str
    channel: str
    conversation: str


@attrs.frozen
class TurnOptions:
    mode: Mode = Mode.DEFAULT
    route: Route = Route.INTERACTIVE
    cap: int = 8
    targets: Mapping[str, str] = attrs.field(factory=dict)
    inputs: Mapping[str, str] = attrs.field(factory=dict)
    task: TaskRef | None = None
    live: bool = False  # a live provider: fillers may be asked of it


@attrs.frozen
class TurnOutcome:
    turn_id: str
    state: str  # a FinalState value, or "paused"
    answer: str
    turn_log: Path
    dialog: str | None = None
    path: str = ""
    problems: tuple[str, ...] = ()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)
