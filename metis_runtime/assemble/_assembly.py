"""An assembled run: everything `metis run` made before the loop starts, and
the loop built from it (`loop`), started as a new run or a resume (`start`);
`run_to_end` drives it: Ctrl-C recorded, then the run cancelled; the
children, the MCP servers, the trace and the journal closed whatever happens."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .._journal import Journal
from .._journal import JournalState
from .._journal import TraceScan
from .._loop import AgentLoop
from .._loop import LoopObserver
from .._loop import RunResult
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


def run_to_end(
    loop: AgentLoop,
    start: Coroutine[Any, Any, RunResult],
    supervisor: AgentSupervisor | None,
    mcp: Started | None = None,
) -> RunResult:
    """`start` (the loop's run or resume) under asyncio. An interrupt
    (KeyboardInterrupt, or the run's task cancelled) closes the trace and
    journal and propagates, as does a MetisRuntimeError (the trace or journal
    could not be written)."""

    async def main() -> RunResult:
        if main_thread:
            # Ctrl-C: the signal is recorded first (the source the interrupt
            # names, SCHED-5), then the run's task is cancelled, as asyncio's
            # own handler would.
            me = asyncio.current_task()

            def on_sigint() -> None:
                loop.signal_received(signal.SIGINT)
                if me is not None:
                    me.cancel()

            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return await start
        finally:
            if supervisor is not None:
                # Children still running are killed; kept worktrees are removed.
                await supervisor.close()

    # Ctrl-C goes to asyncio, which cancels the run: the loop records the interrupt
    # and `close()` kills the children. (The agents' reaper would raise
    # KeyboardInterrupt in the middle of a callback instead; SIGTERM, SIGHUP and
    # the exit handler stay its own.)
    main_thread = threading.current_thread() is threading.main_thread()
    reaper = signal.getsignal(signal.SIGINT) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return asyncio.run(main())
    finally:  # an interrupt too: the caller's resume line follows a closed trace
        if main_thread and reaper is not None:
            signal.signal(signal.SIGINT, reaper)
        if mcp is not None:
            mcp.host.close()  # the servers stop with the run
        loop.trace.close()
        if loop.journal is not None:
            loop.journal.close()
