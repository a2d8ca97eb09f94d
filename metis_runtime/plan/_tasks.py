"""Scheduled tasks: the schedule grammar, adding tasks, and what is due.

A task is a persistent request with an owner, a schedule, a command, the
owner's channel and conversation, the mode it was added with (its
authority), and an outcome history (`task_runs`). Each firing is a new plan
turn of the owner with that authority: actor `scheduler`, route `background`,
never the authority of whoever runs `metis tasks run-due` (PLAN-10).

The grammar (Metnos page, section 11.1: an ambiguous recurrence is refused,
naming what is missing, and nothing runs):

    daily@HH:MM     every day at HH:MM, local time (00:00-23:59)
    every Nm        every N minutes (1-10080)
    every Nh        every N hours (1-168)

A task is due when its next firing time (after its last firing, or from when
it was added) has come; `run-due` fires each due task once (missed firings are
not replayed one by one).
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Any

import attrs

from .._errors import ConfigError
from ._store import PlanStore
from ._store import Task

_DAILY = re.compile(r"daily@(\d{1,2}):(\d{2})")
_EVERY = re.compile(r"every (\d+)([mh])")
_LIMITS = {"m": 7 * 24 * 60, "h": 7 * 24}
GRAMMAR = "daily@HH:MM, every Nm or every Nh"


@attrs.frozen
class Schedule:
    text: str  # canonical
    daily: tuple[int, int] | None = None  # (hour, minute)
    interval: dt.timedelta | None = None

    def next_after(self, since: dt.datetime) -> dt.datetime:
        """The first firing time strictly after `since`."""
        if self.interval is not None:
            return since + self.interval
        assert self.daily is not None
        hour, minute = self.daily
        at = since.replace(hour=hour, minute=minute, second=0, microsecond=0)
        return at if at > since else at + dt.timedelta(days=1)


def parse_schedule(text: str) -> Schedule:
    """The schedule, or ConfigError naming what is missing or wrong."""
    spec = " ".join(text.strip().lower().split())
    if m := _DAILY.fullmatch(spec):
        hour, minute = int(m[1]), int(m[2])
        if hour > 23 or minute > 59:
            raise ConfigError(
                f"{text!r}: {hour:02d}:{minute:02d} is not a time of day (00:00-23:59)"
            )
        return Schedule(f"daily@{hour:02d}:{minute:02d}", daily=(hour, minute))
    if m := _EVERY.fullmatch(spec):
        n, unit = int(m[1]), m[2]
        if not 1 <= n <= _LIMITS[unit]:
            raise ConfigError(f"{text!r}: the interval must be 1-{_LIMITS[unit]}{unit}")
        delta = dt.timedelta(minutes=n) if unit == "m" else dt.timedelta(hours=n)
        return Schedule(f"every {n}{unit}", interval=delta)
    raise ConfigError(f"{text!r}: ambiguous schedule: {_missing(spec)} (the grammar: {GRAMMAR})")


def _missing(spec: str) -> str:
    if spec.startswith("daily@"):
        return "missing the minutes (HH:MM)" if ":" not in spec else "the time is not HH:MM"
    if re.fullmatch(r"(daily|(every|each) day) at .+", spec):
        return "the time of day must be written daily@HH:MM (24-hour clock)"
    if re.search(r"(mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(week|month)s?\b", spec):
        return "weekly and monthly recurrences are not in the grammar"
    if (
        spec == "daily"
        or spec.startswith(("daily ", "every day", "each day"))
        or re.fullmatch(r"(every|each) (other )?(morning|evening|night)s?", spec)
    ):
        return "missing the time of day (daily@HH:MM)"
    if spec in ("every", "each"):
        return "missing the interval (every Nm or every Nh)"
    if re.fullmatch(r"(every|each) \d+", spec):
        return "missing the unit of the interval (m for minutes, h for hours)"
    if spec.startswith(("every", "each")):
        return "the interval is not N minutes (Nm) or N hours (Nh)"
    return "not a recognized recurrence"


def next_due(task: Task) -> dt.datetime:
    schedule = parse_schedule(task.schedule)
    since = dt.datetime.fromisoformat(task.last_fired or task.created_at)
    if task.last_fired is None and schedule.daily is not None:
        since -= dt.timedelta(seconds=1)  # a daily task added at its time fires that day
    return schedule.next_after(since)


def due_tasks(store: PlanStore, now: dt.datetime) -> list[Task]:
    return [t for t in store.tasks() if next_due(t) <= now]


def new_task(
    store: PlanStore,
    *,
    owner: str,
    channel: str,
    conversation: str,
    mode: str,
    schedule: str,
    command: str,
    now: dt.datetime,
) -> Task:
    parsed = parse_schedule(schedule)
    if not command.strip():
        raise ConfigError(f"{schedule!r}: missing the request to run")
    task = Task(
        id=f"task-{uuid.uuid4().hex[:10]}",
        owner=owner,
        channel=channel,
        conversation=conversation,
        mode=mode,
        schedule=parsed.text,
        command=" ".join(command.split()),
        created_at=now.isoformat(),
        last_fired=None,
    )
    store.add_task(task)
    return task


def add_task_from_route(
    store: PlanStore, route: Any, who: Any, options: Any, now: dt.datetime
) -> tuple[bool, str]:
    """The schedule route: record the task, or say what is missing (nothing runs)."""
    try:
        task = new_task(
            store,
            owner=who.owner,
            channel=who.channel,
            conversation=who.conversation,
            mode=options.mode.value,
            schedule=route.schedule,
            command=route.command,
            now=now,
        )
    except ConfigError as exc:
        return False, f"no task recorded: {exc}"
    return True, (
        f"Recorded task {task.id}: {task.schedule} {task.command!r} "
        f"(next run {next_due(task).isoformat()})"
    )
