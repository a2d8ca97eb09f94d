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
    from ._errors import ConfigError as ConfigError
    from ._errors import JournalError as JournalError
    from ._errors import MetisRuntimeError as MetisRuntimeError
    from ._errors import ProviderError as ProviderError
    from ._errors import StreamFormatError as StreamFormatError
    from ._errors import ToolError as ToolError
    from ._errors import ToolInputError as ToolInputError
    from ._graph import load_trace_events as load_trace_events
    from ._graph import trace_graph as trace_graph
    from ._input import input_json_limits as input_json_limits
    from ._input import read_input_text as read_input_text
    from ._journal import Journal as Journal
    from ._journal import JournalState as JournalState
    from ._journal import TracedCall as TracedCall
    from ._journal import TraceScan as TraceScan
    from ._journal import scan_trace as scan_trace
    from ._layout import run_files as run_files
    from ._loop import DEFAULT_SYSTEM as DEFAULT_SYSTEM
    from ._loop import AgentLoop as AgentLoop
    from ._loop import ContextHook as ContextHook
    from ._loop import LoopConfig as LoopConfig
    from ._loop import LoopObserver as LoopObserver
    from ._loop import RunResult as RunResult
    from ._loop import make_header as make_header
    from ._redact import REDACTED as REDACTED
    from ._redact import Redactor as Redactor
    from ._session import Session as Session
    from ._trace import TraceWriteError as TraceWriteError
    from ._trace import TraceWriter as TraceWriter
    from ._yaml import load_yaml as load_yaml
    from .dispatch import Dispatcher as Dispatcher
    from .dispatch import EffectSink as EffectSink
    from .dispatch import PassThroughGate as PassThroughGate
    from .dispatch import PlannedCall as PlannedCall
    from .dispatch import SerialDispatcher as SerialDispatcher

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__)
