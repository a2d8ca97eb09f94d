"""metis_runtime: a real asyncio agent runtime that records an event-graph trace.

- `AgentLoop` runs one agent (specs/loop.md) and records every transition
  with a `TraceWriter`; `Journal` is its write-ahead journal, from which
  `AgentLoop.resume` continues a run whose process died.
- `dispatch`: the `Dispatcher` contract and the `SerialDispatcher`.
- `providers`, `tools`, `permissions`, `shell`: the subsystems the loop uses.
- `trace_graph`: a trace as a networkx graph (DOT text: `metis_check.trace_dot`).

Exports load lazily (PEP 562, see `_lazy.py`): a command that only
reads input (`metis_runtime._input`) does not load the runtime.
"""

import typing as _typing

from metis_trace._lazy import lazy_exports as _lazy_exports

# Imported eagerly: a fail point is taken out of the environment as soon as the
# runtime is imported, so nothing it starts inherits it (see `_failpoints`).
from . import _failpoints  # noqa: F401

if _typing.TYPE_CHECKING:
    from ._errors import ConfigError
    from ._errors import JournalError
    from ._errors import MetisRuntimeError
    from ._errors import ProviderError
    from ._errors import StreamFormatError
    from ._errors import ToolError
    from ._errors import ToolInputError
    from ._graph import load_trace_events
    from ._graph import trace_graph
    from ._input import input_json_limits
    from ._input import read_input_text
    from ._journal import Journal
    from ._journal import JournalState
    from ._journal import TracedCall
    from ._journal import TraceScan
    from ._journal import scan_trace
    from ._layout import run_files
    from ._loop import DEFAULT_SYSTEM
    from ._loop import AgentLoop
    from ._loop import ContextHook
    from ._loop import LoopConfig
    from ._loop import LoopObserver
    from ._loop import RunResult
    from ._loop import make_header
    from ._redact import REDACTED
    from ._redact import Redactor
    from ._session import Session
    from ._trace import TraceWriteError
    from ._trace import TraceWriter
    from ._yaml import load_yaml
    from .dispatch import Dispatcher
    from .dispatch import EffectSink
    from .dispatch import PassThroughGate
    from .dispatch import PlannedCall
    from .dispatch import SerialDispatcher

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._errors": (
        "ConfigError",
        "JournalError",
        "MetisRuntimeError",
        "ProviderError",
        "StreamFormatError",
        "ToolError",
        "ToolInputError",
    ),
    "._graph": (
        "load_trace_events",
        "trace_graph",
    ),
    "._input": (
        "input_json_limits",
        "read_input_text",
    ),
    "._layout": ("run_files",),
    "._journal": (
        "Journal",
        "JournalState",
        "TracedCall",
        "TraceScan",
        "scan_trace",
    ),
    "._loop": (
        "DEFAULT_SYSTEM",
        "AgentLoop",
        "ContextHook",
        "LoopConfig",
        "LoopObserver",
        "RunResult",
        "make_header",
    ),
    "._redact": (
        "REDACTED",
        "Redactor",
    ),
    "._session": ("Session",),
    "._yaml": ("load_yaml",),
    "._trace": (
        "TraceWriteError",
        "TraceWriter",
    ),
    ".dispatch": (
        "Dispatcher",
        "EffectSink",
        "PassThroughGate",
        "PlannedCall",
        "SerialDispatcher",
    ),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

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
    "input_json_limits",
    "load_trace_events",
    "load_yaml",
    "make_header",
    "read_input_text",
    "run_files",
    "scan_trace",
    "trace_graph",
]
