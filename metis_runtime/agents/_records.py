"""The records of an agent tree: where an agent sits (`AgentIdentity`,
`new_tree`), what a refused spawn says (`SpawnRefused`), and what a parent
keeps of each child (`ChildRecord`: its status, its answer, its workspace).
`InlineRunner` is what runs a child in this process (the ablation and tests).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any
from typing import Protocol

import attrs

from metis_trace import Mode

from .._errors import ConfigError
from .._private import private_dirs
from ._config import ChildConfig
from ._guard import SpawnLedger
from ._worktree import AgentWorkspace
from ._worktree import WorkspaceKind

__all__ = ["AgentIdentity", "ChildRecord", "InlineRunner", "SpawnRefused", "new_tree"]

_DONE = ("completed", "failed", "cancelled", "timed_out", "killed")


@attrs.frozen
class AgentIdentity:
    """Where an agent sits in its tree. `run_dir` holds the tree's ledger
    (`guard.json`), its agents' folders (`agents/<id>/`) and worktrees."""

    root_run_id: str
    agent_id: str
    depth: int
    run_dir: Path


class InlineRunner(Protocol):
    """What runs a child in this process to its end (`run_child`)."""

    def __call__(
        self, config: ChildConfig, *, env: dict[str, str] | None = None
    ) -> Awaitable[Any]: ...


@attrs.frozen
class SpawnRefused:
    """A spawn that did not happen: a guard code, or AUTHORITY / UNKNOWN_AGENT / WORKSPACE."""

    code: str
    message: str

    def text(self) -> str:
        return f"spawn refused: {self.code}: {self.message}"


@attrs.define
class ChildRecord:
    agent_id: str
    agent: str
    task: str
    depth: int
    mode: Mode
    tools: tuple[str, ...]
    workspace: AgentWorkspace
    agent_dir: Path
    sync: bool
    started: float
    status: str = "starting"
    pid: int | None = None
    text: str = ""
    error: str = ""
    turns: int = 0
    ended: float | None = None
    changed: tuple[str, ...] = ()
    done: asyncio.Event = attrs.field(factory=asyncio.Event)
    process: asyncio.subprocess.Process | None = None
    inline: asyncio.Task[Any] | None = None  # a child run in this process (ablation)
    watcher: asyncio.Task[None] | None = None
    kill_reason: str | None = None
    reported: bool = False  # its answer reached the parent (a sync spawn's, or wait's result)
    integrated: bool = False  # its workspace was applied to the parent's (integrate_agent)
    choice: str = ""  # the workspace as chosen ("auto: branch, ... is in a git repository")

    @property
    def finished(self) -> bool:
        return self.status in _DONE

    def summary(self) -> dict[str, Any]:
        elapsed = (self.ended or time.monotonic()) - self.started
        out: dict[str, Any] = {
            "agent_id": self.agent_id,
            "agent": self.agent,
            "status": self.status,
            "depth": self.depth,
            "mode": self.mode.value,
            "workspace": str(self.workspace.path),
            "worktree": self.workspace.kind.value,
            "seconds": round(elapsed, 2),
            "turns": self.turns,
        }
        if self.workspace.branch:
            out["branch"] = self.workspace.branch
        if self.choice.startswith("auto"):
            out["worktree_choice"] = self.choice
        if self.integrated:
            out["integrated"] = True
        if self.error:
            out["error"] = self.error
        return out

    def report(self) -> str:
        """The tool result text for a finished child."""
        head = f"agent {self.agent_id} ({self.agent}) {self.status} after {self.turns} turn(s)"
        lines = [head]
        ws = self.workspace
        if ws.kind is not WorkspaceKind.INHERIT:
            kept = self.status == "completed"
            where = f"branch {ws.branch}" if ws.branch else "a copy"
            if self.choice.startswith("auto"):
                where += f"; {self.choice}"
            fate = "kept until you integrate it (integrate_agent) or exit" if kept else "removed"
            if self.integrated:
                fate = "integrated into yours, then removed"
            lines.append(f"workspace: {ws.path} ({where}; {fate})")
            if self.changed:
                lines.append(f"changed: {', '.join(self.changed)}")
        if self.error:
            lines.append(f"error: {self.error}")
        if self.text:
            lines += ["---", self.text]
        return "\n".join(lines)


def new_tree(
    run_dir: str | os.PathLike[str],
    limits: Any = None,
    *,
    root_run_id: str | None = None,
    agent_id: str = "root",
) -> tuple[AgentIdentity, SpawnLedger]:
    """The identity of a root agent and a fresh ledger for its tree."""
    from ._guard import GuardLimits

    run = private_dirs(run_dir)
    if limits is None:
        limits = GuardLimits()
    if not isinstance(limits, GuardLimits):
        raise ConfigError("limits: expected GuardLimits")
    ledger = SpawnLedger.create(run / "guard.json", limits)
    return AgentIdentity(root_run_id or uuid.uuid4().hex, agent_id, 0, run), ledger
