"""`AgentSupervisor`: one agent's children — spawning, watching, waiting, killing.

The class is a chain of mixins, one concern each: `SupervisorState` (what it
holds, what a child inherits), `ChildLifecycle` (a child's process from start
to end), `SpawnTraces` (the headers and `spawn` events), `Spawner` (`spawn`);
this module adds the tools that act on children already spawned (wait, kill,
message, integrate, close). The records it keeps are in `_records`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from typing import Any

from .._private import append_private_jsonl
from ._records import ChildRecord
from ._spawn import Spawner
from ._worktree import IntegrationPlan
from ._worktree import WorkspaceError
from ._worktree import WorkspaceKind

__all__ = ["AgentSupervisor"]


class AgentSupervisor(Spawner):
    """The children of one agent.

    `gate` is this agent's gate (cloned for each child); `visible_tools`
    its visible tool names (a callable is asked at each spawn); `trace` its
    trace writer (the `spawn` events go there; may be set after
    construction). `child_deny` is a deny list applied to every descendant.
    `python` and `env` are those of the child processes; `project_dir`
    is where every descendant looks up `.metis/agents` (default: workspace).
    `ablation` switches protections off, for the child-boundary ablation only;
    `inline` runs children as tasks of this process with that runner
    (`metis_runtime.agents.run_child`: same config, same child builder, no
    process boundary): for the ablation and tests only. The runner is passed in
    because the module that builds an agent builds its supervisor too. The
    agent tools bound to a supervisor are `agent_tools(supervisor)`.
    """

    # --- the other tools --------------------------------------------------------

    def find(self, agent_id: str) -> ChildRecord | None:
        return self.children.get(agent_id)

    def listing(self) -> list[dict[str, Any]]:
        return [r.summary() for r in self.children.values()]

    async def wait(
        self, agent_ids: Sequence[str] = (), timeout_s: float | None = None
    ) -> tuple[list[ChildRecord], list[str]]:
        """Wait for these children (default: every one whose answer this agent
        has not had yet: running ones, and async ones that ended before the
        wait). Returns the records and the ids that are not this agent's children."""
        unknown = [a for a in agent_ids if a not in self.children]
        chosen = [self.children[a] for a in agent_ids if a in self.children]
        if not agent_ids:
            chosen = [r for r in self.children.values() if not r.finished or not r.reported]
        pending = [asyncio.ensure_future(r.done.wait()) for r in chosen if not r.finished]
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            for task in still:
                task.cancel()
        for record in chosen:
            record.reported = record.reported or record.finished
        return chosen, unknown

    async def kill(self, agent_id: str, *, cascade: bool = True) -> ChildRecord | None:
        record = self.children.get(agent_id)
        if record is None:
            return None
        if record.finished:
            return record
        record.kill_reason = "killed"
        proc = record.process
        if record.inline is not None:
            await self._terminate(record)
        elif proc is not None and proc.returncode is None:
            if cascade:
                await self._terminate(record)
            else:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        await record.done.wait()
        return record

    def message(self, agent_id: str, text: str) -> str | None:
        """Queue guidance for a running child (read before its next request);
        None if it was delivered, else why not."""
        record = self.children.get(agent_id)
        if record is None:
            return f"{agent_id} is not a child of this agent"
        if record.finished:
            return f"{agent_id} has already {record.status}"
        append_private_jsonl(
            record.agent_dir / "inbox.jsonl", {"from": self.identity.agent_id, "text": text}
        )
        return None

    def _integrable(self, agent_id: str) -> ChildRecord:
        """The child whose retained workspace may be integrated; WorkspaceError
        (one line, saying why) if there is none."""
        record = self.children.get(agent_id)
        if record is None:
            raise WorkspaceError(f"{agent_id} is not a child of this agent")
        if not record.finished:
            raise WorkspaceError(
                f"agent {agent_id} is still running; wait for it with wait_agent first"
            )
        if record.workspace.kind is WorkspaceKind.INHERIT:
            raise WorkspaceError(
                f"agent {agent_id} worked in your own directory (worktree inherit): "
                "its changes are already there"
            )
        if record.integrated:
            raise WorkspaceError(f"agent {agent_id}: its workspace was already integrated")
        if record.status != "completed":
            raise WorkspaceError(
                f"agent {agent_id} {record.status}: its workspace was removed, nothing to integrate"
            )
        if agent_id not in self.workspaces.retained:
            raise WorkspaceError(f"agent {agent_id}: no workspace of it is retained")
        return record

    def integration_plan(self, agent_id: str) -> IntegrationPlan:
        """What integrating this child's workspace would change, before anything
        changes (WorkspaceError: unknown, running, nothing retained, or the
        changes cannot be listed)."""
        self._integrable(agent_id)
        return self.workspaces.plan(agent_id)

    def integrate(self, agent_id: str, expect: IntegrationPlan | None = None) -> list[str]:
        """Apply a completed child's retained workspace to this agent's
        workspace (the plan `expect`, if given), then remove it; returns the
        changed paths. WorkspaceError, and nothing changed, on a refusal, a
        conflict, or a workspace that no longer matches `expect`."""
        record = self._integrable(agent_id)
        changed = self.workspaces.integrate(agent_id, expect)
        record.integrated = True
        return changed

    async def close(self) -> None:
        """Kill every running child, then remove the retained workspaces."""
        for record in list(self.children.values()):
            if not record.finished and (record.process is not None or record.inline is not None):
                record.kill_reason = record.kill_reason or "cancelled"
                await self._terminate(record)
        watchers = [r.watcher for r in self.children.values() if r.watcher is not None]
        if watchers:
            await asyncio.gather(*watchers, return_exceptions=True)
        self.workspaces.close()
