"""The plan store: one SQLite file under the workspace's `.metis/plan/`.

Tables (stdlib `sqlite3`; the file is 0600 in a 0700 folder):

- `meta(key, value)`: the routing `epoch` (1 until bumped), and where each
  replay scenario's cassette has got to (`replay:<scenario>`), so that
  successive turns of a replayed workspace continue the recording;
- `plans(path, key, framework, executors, families, epoch, champion, runs,
  registered_by, stored_at)`: L0 entries (key: the canonical request) and L1
  entries (key: the intent cluster), with both signatures and the epoch at
  registration. L1 entries are shadows until positive feedback makes one the
  cluster's champion;
- `turns(turn_id, request_key, intent, state, framework, path, finished_at)`:
  finished turns, for `metis plan feedback` and the undo route;
- `tasks(id, owner, channel, conversation, mode, schedule, command, created_at,
  last_fired)` and `task_runs(task_id, turn_id, fired_at, outcome)`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from contextlib import suppress
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Framework
from metis_trace import Signatures
from metis_trace import parse_framework

from .._errors import ConfigError

PLAN_DIR = Path(".metis") / "plan"
DB_NAME = "plan.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    path TEXT NOT NULL, key TEXT NOT NULL, framework TEXT NOT NULL,
    executors TEXT, families TEXT NOT NULL, epoch INTEGER NOT NULL,
    champion INTEGER NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 1,
    registered_by TEXT NOT NULL, stored_at TEXT NOT NULL,
    PRIMARY KEY (path, key));
CREATE TABLE IF NOT EXISTS turns (
    turn_id TEXT PRIMARY KEY, owner TEXT NOT NULL, request_key TEXT NOT NULL,
    intent TEXT NOT NULL, state TEXT NOT NULL, path TEXT NOT NULL,
    framework TEXT NOT NULL, finished_at TEXT NOT NULL, effects INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, channel TEXT NOT NULL,
    conversation TEXT NOT NULL, mode TEXT NOT NULL, schedule TEXT NOT NULL,
    command TEXT NOT NULL, created_at TEXT NOT NULL, last_fired TEXT);
CREATE TABLE IF NOT EXISTS task_runs (
    task_id TEXT NOT NULL, turn_id TEXT NOT NULL, fired_at TEXT NOT NULL,
    outcome TEXT NOT NULL);
"""


@attrs.frozen
class CachedPlan:
    path: str  # "L0" | "L1"
    key: str
    framework: Framework
    signatures: Signatures
    champion: bool
    runs: int
    registered_by: str


@attrs.frozen
class Task:
    id: str
    owner: str
    channel: str
    conversation: str
    mode: str
    schedule: str
    command: str
    created_at: str
    last_fired: str | None


def plan_dir(workspace: Path) -> Path:
    return workspace / PLAN_DIR


def private_dir(path: Path) -> Path:
    """Create `path` (and `.metis/`) as 0700; an existing one is tightened."""
    path.mkdir(parents=True, exist_ok=True)
    for p in (path, *[q for q in path.parents if q.name in (".metis", "plan", "turns")]):
        with suppress(OSError):
            os.chmod(p, 0o700)
    return path


class PlanStore:
    """The workspace's plan database. Use as a context manager, or `close()`."""

    def __init__(self, workspace: Path) -> None:
        folder = private_dir(plan_dir(workspace))
        self.path = folder / DB_NAME
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        os.chmod(self.path, 0o600)
        try:
            self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self.db.executescript(_SCHEMA)
            version = self._meta("schema_version")
            if version is None:
                self._set_meta("schema_version", str(SCHEMA_VERSION))
            elif version != str(SCHEMA_VERSION):
                raise ConfigError(f"{self.path}: plan store version {version}, expected 1")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{self.path}: not a plan store ({exc})") from exc

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> PlanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- meta --------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @property
    def epoch(self) -> int:
        return int(self._meta("epoch") or 1)

    def bump_epoch(self) -> int:
        with self.transaction():
            new = self.epoch + 1
            self._set_meta("epoch", str(new))
        return new

    def replay_position(self, scenario: str) -> int:
        return int(self._meta(f"replay:{scenario}") or 0)

    def set_replay_position(self, scenario: str, position: int) -> None:
        self._set_meta(f"replay:{scenario}", str(position))

    # --- plans ---------------------------------------------------------------------

    def lookup(self, path: str, key: str) -> CachedPlan | None:
        row = self.db.execute(
            "SELECT framework, executors, families, epoch, champion, runs, registered_by "
            "FROM plans WHERE path = ? AND key = ?",
            (path, key),
        ).fetchone()
        if row is None:
            return None
        try:
            framework = parse_framework(json.loads(row[0]))
        except (ValueError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{self.path}: plans[{path} {key!r}]: {exc}") from exc
        sigs = Signatures(executors=row[1], families=row[2], epoch=int(row[3]))
        return CachedPlan(path, key, framework, sigs, bool(row[4]), int(row[5]), str(row[6]))

    def store_plan(
        self,
        path: str,
        key: str,
        framework: Framework,
        signatures: Signatures,
        turn: str,
        now: str,
    ) -> CachedPlan:
        """Register (or refresh) an entry. L1: a new shadow, or one more run of the
        same framework; a different framework replaces a shadow, never a champion."""
        text = json.dumps(framework.model_dump(mode="json"), sort_keys=True)
        with self.transaction():
            old = self.lookup(path, key)
            if old is not None and path == "L1" and old.champion and old.framework != framework:
                return old  # a champion is replaced only by feedback
            runs = old.runs + 1 if old is not None and old.framework == framework else 1
            champion = old.champion if old is not None and old.framework == framework else False
            self.db.execute(
                "INSERT OR REPLACE INTO plans (path, key, framework, executors, families, epoch,"
                " champion, runs, registered_by, stored_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    path,
                    key,
                    text,
                    signatures.executors,
                    signatures.families,
                    signatures.epoch,
                    int(champion),
                    runs,
                    turn,
                    now,
                ),
            )
        got = self.lookup(path, key)
        assert got is not None
        return got

    def set_champion(self, key: str, champion: bool) -> bool:
        with self.transaction():
            cur = self.db.execute(
                "UPDATE plans SET champion = ? WHERE path = 'L1' AND key = ?", (int(champion), key)
            )
        return cur.rowcount > 0

    def plans(self) -> list[CachedPlan]:
        rows = self.db.execute("SELECT path, key FROM plans ORDER BY path, key").fetchall()
        return [p for r in rows if (p := self.lookup(r[0], r[1])) is not None]

    # --- turns -------------------------------------------------------------------------

    def record_turn(self, **row: Any) -> None:
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.transaction():
            self.db.execute(
                f"INSERT OR REPLACE INTO turns ({cols}) VALUES ({marks})", tuple(row.values())
            )

    def turn(self, turn_id: str) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM turns WHERE turn_id = ?", (turn_id,))
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))

    def last_turn(self, owner: str, *, with_effects: bool = True) -> dict[str, Any] | None:
        cur = self.db.execute(
            "SELECT * FROM turns WHERE owner = ? AND state = 'completed'"
            + (" AND effects > 0" if with_effects else "")
            + " ORDER BY finished_at DESC, rowid DESC LIMIT 1",
            (owner,),
        )
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))

    # --- tasks -------------------------------------------------------------------------

    def add_task(self, task: Task) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO tasks (id, owner, channel, conversation, mode, schedule, command,"
                " created_at, last_fired) VALUES (?,?,?,?,?,?,?,?,?)",
                attrs.astuple(task),
            )

    def tasks(self, owner: str | None = None) -> list[Task]:
        sql = "SELECT id, owner, channel, conversation, mode, schedule, command, created_at,"
        sql += " last_fired FROM tasks"
        rows = (
            self.db.execute(sql + " WHERE owner = ? ORDER BY created_at, id", (owner,))
            if owner is not None
            else self.db.execute(sql + " ORDER BY created_at, id")
        ).fetchall()
        return [Task(*r) for r in rows]

    def fired(self, task_id: str, turn_id: str, at: str, outcome: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE tasks SET last_fired = ? WHERE id = ?", (at, task_id))
            self.db.execute(
                "INSERT INTO task_runs (task_id, turn_id, fired_at, outcome) VALUES (?,?,?,?)",
                (task_id, turn_id, at, outcome),
            )

    def runs(self, task_id: str) -> list[tuple[str, str, str]]:
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in self.db.execute(
                "SELECT turn_id, fired_at, outcome FROM task_runs WHERE task_id = ? ORDER BY rowid",
                (task_id,),
            ).fetchall()
        ]
