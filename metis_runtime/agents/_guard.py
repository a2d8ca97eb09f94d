"""The spawn guard, shared by every process of one agent tree.

The runtime's own reading of specs/children.md (it must not import the
model; tests hold it equal to `metis_model._agents.guard_decision`). Checks,
in this order: depth, total, per-parent, concurrency, duplicate task. A
refusal is a value with a code.

The state lives in a JSON ledger under the tree's run directory. Every
decision reads, decides and writes it under an exclusive `flock`, so sibling
processes cannot both take the last slot. A running entry whose process has
died (its pid, or the pid of the parent that reserved it, is gone) is
reaped before each decision.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from attrs import asdict
from attrs import frozen

from metis_trace import InputError

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._input import read_input_json
from .._private import open_private
from .._private import private_dirs
from .._private import write_private_json


class GuardCode(StrEnum):
    DEPTH_LIMIT = "DEPTH_LIMIT"
    TOTAL_LIMIT = "TOTAL_LIMIT"
    PER_PARENT_LIMIT = "PER_PARENT_LIMIT"
    CONCURRENCY_LIMIT = "CONCURRENCY_LIMIT"
    DUPLICATE_TASK_WARNING = "DUPLICATE_TASK_WARNING"


@frozen
class GuardLimits:
    max_depth: int = 5
    max_total: int = 32
    max_per_parent: int = 8
    max_concurrent: int = 4
    timeout_s: float = 600.0

    def __attrs_post_init__(self) -> None:
        for name in ("max_depth", "max_total", "max_per_parent", "max_concurrent"):
            if getattr(self, name) < 0:
                raise ConfigError(f"spawn guard: {name} must be >= 0")
        if self.timeout_s <= 0:
            raise ConfigError("spawn guard: timeout_s must be positive")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def normalized_task(text: str) -> str:
    return " ".join(text.lower().split())


def task_digest(text: str) -> str:
    """sha-256 (16 hex digits) of the trimmed, lower-cased, whitespace-collapsed task."""
    return hashlib.sha256(normalized_task(text).encode("utf-8")).hexdigest()[:16]


@frozen
class GuardRequest:
    parent_id: str
    parent_depth: int
    agent: str
    task: str
    force: bool = False
    rationale: str = ""


@frozen
class GuardAdmit:
    depth: int
    task_hash: str
    forced: bool  # admitted only because of force or a rationale


@frozen
class GuardRefusal:
    code: GuardCode
    message: str

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"


@frozen
class GuardSnapshot:
    """The ledger's content: what `decide` is a function of."""

    limits: GuardLimits
    total: int = 0
    per_parent: tuple[tuple[str, int], ...] = ()
    running: tuple[str, ...] = ()
    tasks: tuple[tuple[str, str], ...] = ()


def decide(state: GuardSnapshot, request: GuardRequest) -> GuardAdmit | GuardRefusal:
    """The first failing check, in order, or admission."""
    lim = state.limits
    depth = request.parent_depth + 1
    if depth > lim.max_depth:
        return GuardRefusal(
            GuardCode.DEPTH_LIMIT, f"a child at depth {depth} exceeds max depth {lim.max_depth}"
        )
    if state.total >= lim.max_total:
        return GuardRefusal(
            GuardCode.TOTAL_LIMIT,
            f"this tree has spawned {state.total} agents (max {lim.max_total})",
        )
    spawned = dict(state.per_parent).get(request.parent_id, 0)
    if spawned >= lim.max_per_parent:
        return GuardRefusal(
            GuardCode.PER_PARENT_LIMIT,
            f"{request.parent_id} has spawned {spawned} children (max {lim.max_per_parent})",
        )
    if len(state.running) >= lim.max_concurrent:
        return GuardRefusal(
            GuardCode.CONCURRENCY_LIMIT,
            f"{len(state.running)} agents are running (max {lim.max_concurrent}); "
            "wait for one with wait_agent",
        )
    digest = task_digest(request.task)
    overridden = request.force or bool(request.rationale.strip())
    duplicate = (request.agent, digest) in set(state.tasks)
    if duplicate and not overridden:
        return GuardRefusal(
            GuardCode.DUPLICATE_TASK_WARNING,
            f"{request.agent} was already given this task in this tree; if a second run "
            "is really needed, call again with force: true or a rationale",
        )
    return GuardAdmit(depth, digest, forced=duplicate)


def _alive(pid: int | None) -> bool:
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


class SpawnLedger:
    """The guard's state file of one agent tree (`<run dir>/guard.json`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    @classmethod
    def create(cls, path: str | os.PathLike[str], limits: GuardLimits) -> SpawnLedger:
        ledger = cls(path)
        private_dirs(ledger.path.parent)
        with ledger._locked():
            if not ledger.path.exists():
                ledger._write(
                    {
                        "limits": limits.to_json(),
                        "total": 0,
                        "per_parent": {},
                        "running": {},
                        "tasks": [],
                    }
                )
        return ledger

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = open_private(self._lock_path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _read(self) -> dict[str, Any]:
        try:
            data = read_input_json(self.path)
        except InputError as exc:
            raise MetisRuntimeError(f"unreadable spawn ledger: {exc}") from exc
        if not isinstance(data, dict):
            raise MetisRuntimeError(f"{self.path}: the spawn ledger is not a JSON object")
        return data

    def _write(self, data: dict[str, Any]) -> None:
        write_private_json(self.path, data, indent=0)

    @staticmethod
    def _snapshot(data: dict[str, Any]) -> GuardSnapshot:
        return GuardSnapshot(
            limits=GuardLimits(**data["limits"]),
            total=int(data["total"]),
            per_parent=tuple(sorted((str(k), int(v)) for k, v in data["per_parent"].items())),
            running=tuple(sorted(data["running"])),
            tasks=tuple(sorted((str(a), str(h)) for a, h in data["tasks"])),
        )

    @staticmethod
    def _reap(data: dict[str, Any]) -> None:
        running: dict[str, dict[str, Any]] = data["running"]
        for agent_id, entry in list(running.items()):
            pid = entry.get("pid")
            if not _alive(pid if pid is not None else entry.get("owner")):
                del running[agent_id]

    @property
    def limits(self) -> GuardLimits:
        with self._locked():
            return GuardLimits(**self._read()["limits"])

    def snapshot(self) -> GuardSnapshot:
        with self._locked():
            data = self._read()
            self._reap(data)
            return self._snapshot(data)

    def request(self, request: GuardRequest, agent_id: str) -> GuardAdmit | GuardRefusal:
        """Decide; on admission, reserve the slot for `agent_id` (owned by this process)."""
        with self._locked():
            data = self._read()
            self._reap(data)
            got = decide(self._snapshot(data), request)
            if isinstance(got, GuardAdmit):
                data["total"] += 1
                per = data["per_parent"]
                per[request.parent_id] = per.get(request.parent_id, 0) + 1
                data["running"][agent_id] = {"pid": None, "owner": os.getpid()}
                key = [request.agent, got.task_hash]
                if key not in data["tasks"]:
                    data["tasks"].append(key)
                self._write(data)
            return got

    def started(self, agent_id: str, pid: int) -> None:
        with self._locked():
            data = self._read()
            if agent_id in data["running"]:
                data["running"][agent_id]["pid"] = pid
                self._write(data)

    def finished(self, agent_id: str) -> None:
        """The child ended, any way: it no longer counts towards concurrency."""
        with self._locked():
            data = self._read()
            if data["running"].pop(agent_id, None) is not None:
                self._write(data)
