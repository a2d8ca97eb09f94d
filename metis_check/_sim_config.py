"""The simulated runtime's setting: its tools, its knobs, its world, its recorder.

`SimConfig` holds the probabilities a simulated run draws with; the tools by
kind, the workspace, the PreToolUse hooks and the gate settings a simulated
header records are what every simulated run shares (`_generate.simulate`).
`_Recorder` appends events with their seq, time and valid causes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from metis_trace import Decision
from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import Route
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import content_digest

__all__ = ["ALL_TOOLS", "HOOKS", "SIM_PERMISSIONS", "TOOLS_BY_KIND", "WORKSPACE", "SimConfig"]


TOOLS_BY_KIND: dict[ToolKind, tuple[str, ...]] = {
    ToolKind.READ_ONLY: ("read", "grep", "ls"),
    ToolKind.EDIT: ("edit", "write"),
    ToolKind.EXEC: ("bash",),
    ToolKind.PLAN_CONTROL: ("exit_plan_mode",),
}
ALL_TOOLS: tuple[str, ...] = (
    "read",
    "grep",
    "ls",
    "edit",
    "write",
    "bash",
    "exit_plan_mode",
    "spawn_agent",
)


@attrs.frozen
class SimConfig:
    turns: int = 4
    max_batch: int = 5
    mode: Mode | None = None  # None: choose at random
    route: Route | None = None
    headless_default: Decision = Decision.DENY
    p_rules: float = 0.4
    p_protected: float = 0.1
    p_out_of_scope: float = 0.1
    p_error: float = 0.15
    p_cancel: float = 0.1
    p_interrupt: float = 0.1
    p_background: float = 0.2
    p_spawn: float = 0.15
    p_compaction: float = 0.2
    p_hooks: float = 0.3  # a run has PreToolUse hooks in force
    p_veto: float = 0.2  # a hook vetoes a call it covers
    p_timeout: float = 0.1  # a running call is cancelled by its time limit
    queue_keys: int = 2


# The simulated workspace: edits write one of its files, reads read one of
# them or the whole of it (a grep over the workspace), which SCHED-6 orders.
WORKSPACE = "/ws"
# What a committed call's result carries (its commit's digest is of it, RETRY-2):
# the output (empty here), or after a resume the journal's copy of it.
_OUTPUT_DIGEST = content_digest("")
_JOURNALED = "[from the journal]"
HOOKS: tuple[HookRef, ...] = (HookRef(id="guard-shell", matcher="bash"), HookRef(id="audit"))


class _Recorder:
    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self.t = 0.0

    def add(self, factory: Callable[..., TraceEvent], *causes: int, **fields: Any) -> int:
        seq = len(self.events)
        valid = tuple(sorted({c for c in causes if 0 <= c < seq}))
        self.events.append(factory(seq=seq, t=round(self.t, 6), causes=valid, **fields))
        return seq


# The gate settings a simulated header records (`meta.permissions`, AUTH-4).
# Simulated inputs name no path and no command, so the deriver is sure of
# nothing in a valid run; the AUTH-4 mutator gives a call an input these
# settings decide.
SIM_PERMISSIONS: dict[str, Any] = {
    "workspace": "/ws",
    "home": "/home/sim",
    "roots": ["/ws"],
    "protected": [],
    "auto": False,
    "rules": [
        {"behavior": "deny", "source": "project", "pattern": "Bash(rm:*)", "recency": 1},
        {"behavior": "ask", "source": "cli", "pattern": "Read(secrets/**)", "recency": 2},
    ],
}
