"""An assembled run: everything `metis run` made before the loop starts, and
the loop built from it (`loop`), started as a new run or a resume (`start`)."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

import attrs

from .._journal import Journal, JournalState, TraceScan
from .._loop import AgentLoop, LoopObserver, RunResult
from .._trace import TraceWriter
from ..agents import AgentSupervisor
from ..context import ContextBudget
from ..mcp import Started
from ..permissions import Gate
from ..providers import Provider
from ..tools import ToolRegistry
from ._parts import make_loop


@attrs.frozen
class Assembly:
    """A run ready to start: its trace and journal open, its servers started,
    its supervisor bound. `task` for a new run; `resumed` for a resume."""

    run_id: str
    provider_name: str
    trace_path: Path
    tree: Path
    workspace: Path
    config: Mapping[str, Any]
    provider: Provider
    registry: ToolRegistry
    gate: Gate
    trace: TraceWriter
    journal: Journal
    budget: ContextBudget
    supervisor: AgentSupervisor | None
    mcp: Started | None
    task: str = ""
    resumed: tuple[JournalState, TraceScan] | None = None

    def loop(self, observer: LoopObserver, *, serial: bool) -> AgentLoop:
        """The run's loop (ConfigError: a recorded setting it cannot use)."""
        return make_loop(
            self.provider,
            self.registry,
            self.gate,
            self.workspace,
            self.trace,
            self.journal,
            config=self.config,
            budget=self.budget,
            tree=self.tree,
            serial=serial,
            observer=observer,
        )

    def start(self, loop: AgentLoop) -> Coroutine[Any, Any, RunResult]:
        """The loop's run of the task, or its resume of the journalled state."""
        if self.resumed is not None:
            return loop.resume(*self.resumed)
        return loop.run(self.task)
