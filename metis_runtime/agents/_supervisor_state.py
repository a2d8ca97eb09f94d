"""`SupervisorState`: what an `AgentSupervisor` holds (its identity, gate,
catalog, provider, ledger, children, workspaces) and what a child of it
inherits (`parent_context`, the gate cloned for a child). The mixins in
`_lifecycle`, `_spawn_trace` and `_spawn` build on it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_trace import Decision

from .._trace import TraceWriter
from ..dispatch import GateLike
from ..permissions import Refusal
from ._config import GateConfig
from ._config import ProviderConfig
from ._config import clone_gate_config
from ._config import gate_mode
from ._definitions import AgentCatalog
from ._guard import SpawnLedger
from ._hooks import HookSpec
from ._process import install_reaper
from ._records import AgentIdentity
from ._records import ChildRecord
from ._records import InlineRunner
from ._resolve import ParentContext
from ._resolve import ResolvedAgent
from ._worktree import WorkspaceManager

__all__ = ["SupervisorState"]


class SupervisorState:
    """The state of one agent's supervisor, and what its children inherit."""

    def __init__(
        self,
        identity: AgentIdentity,
        *,
        workspace: str | os.PathLike[str],
        gate: GateLike[Any],
        visible_tools: Sequence[str] | Callable[[], Sequence[str]],
        catalog: AgentCatalog,
        provider: ProviderConfig,
        ledger: SpawnLedger,
        hooks: Sequence[HookSpec] = (),
        child_deny: Sequence[str] = (),
        headless_default: Decision = Decision.DENY,
        context_budget: Mapping[str, int] | None = None,
        max_turns: int = 50,
        trace: TraceWriter | None = None,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        project_dir: str | os.PathLike[str] | None = None,
        ablation: Mapping[str, Any] | None = None,
        inline: InlineRunner | None = None,
        mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
        mcp_classes: Sequence[tuple[str, str, str | None]] = (),
    ) -> None:
        self.identity = identity
        self.workspace = Path(os.path.realpath(workspace))
        self.gate = gate
        self._visible = visible_tools
        self.catalog = catalog
        self.provider = provider
        self.ledger = ledger
        self.hooks = tuple(hooks)
        self.child_deny = tuple(child_deny)
        self.headless_default = headless_default
        self.context_budget = dict(context_budget) if context_budget else None
        self.max_turns = max_turns
        self.trace = trace
        self.python = python
        self.env = dict(env) if env is not None else None
        self.project_dir = str(project_dir) if project_dir is not None else str(self.workspace)
        self.ablation = dict(ablation or {})
        self.inline = inline
        # MCP servers a child may connect to (only those its surface has tools of).
        self.mcp_servers = {k: dict(v) for k, v in (mcp_servers or {}).items()}
        self.mcp_classes = tuple(mcp_classes)
        self.children: dict[str, ChildRecord] = {}
        # The run's own files are never integrated into, whatever the gate decided.
        self.workspaces = WorkspaceManager(getattr(gate, "protected_paths", ()))
        self.limits = ledger.limits
        install_reaper()

    def bind(
        self,
        visible_tools: Sequence[str] | Callable[[], Sequence[str]],
        trace: TraceWriter | None,
    ) -> None:
        """Set what this agent shows (usually `registry.names`, once the registry
        holds `agent_tools(self)`) and the trace its `spawn` events go to."""
        self._visible = visible_tools
        self.trace = trace

    # --- helpers --------------------------------------------------------------

    def visible_tools(self) -> tuple[str, ...]:
        got = self._visible() if callable(self._visible) else self._visible
        return tuple(got)

    @property
    def agents_dir(self) -> Path:
        return self.identity.run_dir / "agents"

    # --- spawning -------------------------------------------------------------

    def parent_context(self) -> ParentContext:
        """What a child of this agent inherits (its definition narrows it)."""
        return ParentContext(
            gate_mode(self.gate),
            self.visible_tools(),
            self.provider,
            self.workspace,
            self.max_turns,
        )

    def runs_in_place(self, agent: str, mode: str | None, worktree: str | None) -> bool:
        """Whether a spawn with these call arguments may run sync in this
        agent's own directory (no git asked: a definition that names a
        workspace, or a background one, does not)."""
        definition = self.catalog.get(agent)
        sync = mode == "sync" if mode is not None else not (definition and definition.background)
        chosen = worktree or (definition.workspace if definition is not None else None)
        return sync and chosen in (None, "inherit")

    def _child_gate(self, resolved: ResolvedAgent, child_workspace: Path) -> GateConfig | Refusal:
        """This agent's gate cloned for the child `resolved` describes."""
        return clone_gate_config(
            self.gate,
            resolved.mode,
            parent_workspace=self.workspace,
            child_workspace=child_workspace,
            headless_default=self.headless_default,
            extra_deny=resolved.deny_rules,
        )
