"""`SpawnTraces`: what the traces record of a tree — this agent's own header
`meta` and hooks, the header written for each child before it starts (so the
tree links even if the child dies at once), and the `spawn` event.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import Route
from metis_trace import TraceHeader

from .._trace import TraceWriter
from ._config import ChildConfig
from ._config import build_gate
from ._config import gate_mode
from ._guard import GuardAdmit
from ._hooks import header_hooks
from ._placement import WorkspacePlan
from ._resolve import ResolvedAgent
from ._supervisor_state import SupervisorState

__all__ = ["PRODUCER", "SpawnTraces"]

PRODUCER = "metis_runtime.agents"


class SpawnTraces(SupervisorState):
    """The trace headers and `spawn` events of an agent's children."""

    def header_meta(self) -> dict[str, Any]:
        """What this agent's own trace header should carry in `meta`
        (the guard's limits: CHILD-4; its gate's settings, `permissions`:
        AUTH-4 and CHILD-2)."""
        describe = getattr(self.gate, "header_meta", None)
        gate = {"permissions": describe()} if callable(describe) else {}
        return {"guard": self.limits.to_json(), **gate}

    def header_hooks(self) -> tuple[HookRef, ...]:
        """The hooks in force, as this agent's trace header lists them (CHILD-6)."""
        return header_hooks(self.hooks)

    def _emit_spawn(self, agent_id: str, mode: Mode, tools: Sequence[str], requested: Mode) -> None:
        if self.trace is None:
            return
        n = self.trace.next_seq
        self.trace.emit(
            "spawn",
            (n - 1,) if n else (),
            agent_id=agent_id,
            child_mode=mode,
            child_tools=list(tools),
            parent_mode=gate_mode(self.gate),
            parent_tools=list(self.visible_tools()),
            requested_mode=requested,
        )

    def _write_child_header(
        self,
        config: ChildConfig,
        admitted: GuardAdmit,
        resolved: ResolvedAgent,
        plan: WorkspacePlan,
    ) -> None:
        header = TraceHeader(
            run_id=config.run_id,
            root_run_id=config.root_run_id,
            parent_id=config.parent_id,
            agent_id=config.agent_id,
            depth=config.depth,
            mode=config.mode,
            route=Route.HEADLESS,
            headless_default=config.gate.headless_default,
            tools=config.tools,
            hooks=header_hooks(config.hooks),
            producer=PRODUCER,
            meta={
                "agent": config.agent.name,
                "task": config.task,
                "task_hash": admitted.task_hash,
                "forced": admitted.forced,
                "guard": self.limits.to_json(),
                "workspace": config.workspace,
                "worktree": plan.describe(),
                "definition": config.agent.path or config.agent.origin,
                "provider": {
                    "kind": config.provider.kind,
                    "model": config.provider.model,
                    "base_url": config.provider.base_url,
                    "thinking": config.provider.thinking,
                    "headers": sorted(config.provider.headers),
                    "routing": config.provider.routing,
                    "sources": dict(resolved.sources),
                },
                **({"notes": list(resolved.notes)} if resolved.notes else {}),
                **({"mode_note": resolved.mode_note} if resolved.mode_note else {}),
                **_gate_meta(config),
            },
        )
        TraceWriter(config.trace_path, header).close()


def _gate_meta(config: ChildConfig) -> dict[str, Any]:
    """The child's gate as its header records it (`meta.permissions`, AUTH-4
    and CHILD-2): the gate the child builds from the same config."""
    gate = build_gate(config.gate, Path(config.workspace))
    describe = getattr(gate, "header_meta", None)
    return {"permissions": describe()} if callable(describe) else {}
