"""`Spawner`: how an `AgentSupervisor` starts a child.

A spawn, in order: look up the definition; resolve it against this agent
and the call (`_resolve`: tools, mode, provider, workspace; a refusal is a
value); clone the gate for that mode (`clone_for_child`); ask the tree's spawn
guard (a refusal is a value with a code); make the workspace; write the
child's trace header (so the tree links even if the child dies at once);
record the `spawn` event in this agent's trace; start
`python -m metis_runtime.agents._child CONFIG.json` in its own process group.
A watcher waits for it (killing its group at the timeout), reads its result,
releases its guard slot and keeps or removes its workspace.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Sequence

from metis_trace import Mode

from .._errors import ConfigError
from .._private import private_dirs
from .._private import write_private_json
from ..mcp import servers_for_surface
from ..permissions import Refusal
from ._config import ChildConfig
from ._guard import GuardRefusal
from ._guard import GuardRequest
from ._lifecycle import ChildLifecycle
from ._records import ChildRecord
from ._records import SpawnRefused
from ._resolve import ResolveRefusal
from ._resolve import resolve_agent
from ._spawn_trace import SpawnTraces
from ._worktree import WorkspaceError
from ._worktree import make_workspace

__all__ = ["Spawner"]


class Spawner(SpawnTraces, ChildLifecycle):
    """Spawning a child: resolve, clone the gate, ask the guard, start it."""

    async def spawn(
        self,
        agent: str,
        task: str,
        *,
        sync: bool | None = None,
        worktree: str | None = None,
        tools: Sequence[str] | None = None,
        disallowed_tools: Sequence[str] = (),
        permission_mode: Mode | None = None,
        context: str = "",
        force: bool = False,
        rationale: str = "",
    ) -> ChildRecord | SpawnRefused:
        """Start a child. `sync` None: async if the definition says
        `background: true`, else sync; `worktree` None: the definition's
        workspace, else `inherit` (see `_resolve`)."""
        definition = self.catalog.get(agent)
        if definition is None:
            known = ", ".join(self.catalog.names()) or "none"
            return SpawnRefused("UNKNOWN_AGENT", f"no agent named {agent!r} (known: {known})")
        resolved = await asyncio.to_thread(
            resolve_agent,
            definition,
            self.parent_context(),
            call_tools=tools,
            call_deny=disallowed_tools,
            call_mode=permission_mode,
            call_worktree=worktree,
            tree_deny=self.child_deny,
        )
        if isinstance(resolved, ResolveRefusal):
            return SpawnRefused(resolved.code, resolved.message)
        if isinstance(resolved.workspace, ResolveRefusal):
            return SpawnRefused(resolved.workspace.code, resolved.workspace.message)
        plan = resolved.workspace
        sync = sync if sync is not None else not resolved.background
        agent_id = f"{agent}-{uuid.uuid4().hex[:8]}"
        # The gate is cloned against the child's workspace; the mode check does not depend on it.
        try:
            probe = self._child_gate(resolved, self.workspace)
        except ConfigError as exc:  # a gate without rules cannot carry deny rules
            return SpawnRefused("AUTHORITY", str(exc))
        if isinstance(probe, Refusal):
            return SpawnRefused("AUTHORITY", probe.reason)
        mode = probe.mode
        request = GuardRequest(
            self.identity.agent_id, self.identity.depth, agent, task, force, rationale
        )
        admitted = await asyncio.to_thread(self.ledger.request, request, agent_id)
        if isinstance(admitted, GuardRefusal):
            return SpawnRefused(admitted.code.value, admitted.message)
        try:
            ws = await asyncio.to_thread(
                make_workspace,
                plan.kind,
                self.workspace,
                self.identity.run_dir / "worktrees",
                agent_id,
                branch=plan.branch,
            )
        except (WorkspaceError, OSError) as exc:
            self.ledger.finished(agent_id)
            return SpawnRefused("WORKSPACE", str(exc))
        gate_cfg = self._child_gate(resolved, ws.path)
        assert not isinstance(gate_cfg, Refusal)  # the probe above already passed
        if self.ablation.get("open_gate"):
            gate_cfg = gate_cfg.model_copy(update={"kind": "open"})
        agent_dir = self.agents_dir / agent_id
        private_dirs(agent_dir)
        config = ChildConfig(
            agent=definition,
            task=task,
            context=context,
            root_run_id=self.identity.root_run_id,
            run_id=uuid.uuid4().hex,
            parent_id=self.identity.agent_id,
            agent_id=agent_id,
            depth=admitted.depth,
            parent_pid=os.getpid(),
            run_dir=str(self.identity.run_dir),
            agent_dir=str(agent_dir),
            workspace=str(ws.path),
            project_dir=self.project_dir,
            mode=mode,
            tools=resolved.tools,
            filter_registry=not self.ablation.get("unfiltered_registry", False),
            gate=gate_cfg,
            hooks=self.hooks,
            provider=resolved.provider,
            child_deny=self.child_deny,
            spawnable=resolved.spawnable,
            context_budget=self.context_budget,
            max_turns=resolved.max_turns,
            mcp_servers=servers_for_surface(self.mcp_servers, resolved.tools),
            mcp_classes=self.mcp_classes,
        )
        record = ChildRecord(
            agent_id=agent_id,
            agent=agent,
            task=task,
            depth=admitted.depth,
            mode=mode,
            tools=config.tools,
            workspace=ws,
            agent_dir=agent_dir,
            sync=sync,
            started=time.monotonic(),
        )
        self.children[agent_id] = record
        record.choice = plan.describe()
        self._write_child_header(config, admitted, resolved, plan)
        self._emit_spawn(agent_id, mode, config.tools, resolved.mode)
        # Redacted like every file metis writes: the child works on what is on disk.
        write_private_json(agent_dir / "config.json", config.model_dump(mode="json"))
        try:
            if self.inline:
                self._start_inline(record, config)
            else:
                await self._start(record, config)
        except OSError as exc:
            record.status, record.error = "failed", f"could not start: {exc}"
            self._finish(record)
            record.reported = True  # the spawn's own result says so
            return record
        record.watcher = asyncio.ensure_future(self._watch(record))
        if sync:
            await self._await_child(record)
            record.reported = True
        return record
