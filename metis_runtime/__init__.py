"""metis_runtime: a real asyncio agent runtime that records an event-graph trace.

- `AgentLoop` runs one agent (specs/loop.md) and records every transition
  with a `TraceWriter`; `Journal` is its write-ahead journal, from which
  `AgentLoop.resume` continues a run whose process died.
- `dispatch`: the `Dispatcher` contract and the `SerialDispatcher`.
- `providers`, `tools`, `permissions`, `shell`: the subsystems the loop uses.
- `trace_graph` / `trace_dot`: a trace as a networkx graph or DOT text.
"""

from ._errors import (
    ConfigError,
    JournalError,
    MetisRuntimeError,
    ProviderError,
    StreamFormatError,
    ToolError,
    ToolInputError,
)
from ._failpoints import inherited as inherited_failpoint
from ._graph import load_trace_events, trace_dot, trace_graph
from ._journal import Journal, JournalState, TracedCall, TraceScan, scan_trace
from ._loop import (
    DEFAULT_SYSTEM,
    AgentLoop,
    ContextHook,
    LoopConfig,
    LoopObserver,
    RunResult,
    make_header,
)
from ._redact import REDACTED, Redactor
from ._session import Session
from ._trace import TraceWriteError, TraceWriter
from .dispatch import Dispatcher, EffectSink, PassThroughGate, PlannedCall, SerialDispatcher

__all__ = [
    "DEFAULT_SYSTEM",
    "REDACTED",
    "AgentLoop",
    "ConfigError",
    "ContextHook",
    "Dispatcher",
    "EffectSink",
    "Journal",
    "JournalError",
    "JournalState",
    "LoopConfig",
    "LoopObserver",
    "MetisRuntimeError",
    "PassThroughGate",
    "PlannedCall",
    "ProviderError",
    "Redactor",
    "RunResult",
    "SerialDispatcher",
    "Session",
    "StreamFormatError",
    "ToolError",
    "ToolInputError",
    "TraceScan",
    "TraceWriteError",
    "TraceWriter",
    "TracedCall",
    "inherited_failpoint",
    "load_trace_events",
    "make_header",
    "scan_trace",
    "trace_dot",
    "trace_graph",
]
