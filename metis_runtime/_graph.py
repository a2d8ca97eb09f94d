"""The trace as a networkx graph, for analysis (its picture is
`metis_check.trace_dot`, drawn as `metis draw` draws it).

Nodes are event `seq`s carrying the event's fields as attributes; an edge
`c -> s` for every `c` in event `s`'s `causes`, so edges point forward in
time and the graph is a DAG (TRACE-1).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import networkx as nx

from metis_trace import InputError
from metis_trace import TraceEvent

from ._errors import MetisRuntimeError
from ._input import read_trace_path


def trace_graph(events: Iterable[TraceEvent]) -> Any:
    """A `networkx.DiGraph` of the events (typed `Any`: networkx is untyped)."""
    graph = nx.DiGraph()
    for event in events:
        attrs = event.model_dump(mode="json", exclude={"seq", "causes"})
        graph.add_node(event.seq, **attrs)
        for cause in event.causes:
            graph.add_edge(cause, event.seq)
    return graph


def load_trace_events(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """The events of a trace file; `MetisRuntimeError` naming the line if bad."""
    try:
        return read_trace_path(path)[1]
    except InputError as exc:
        raise MetisRuntimeError(str(exc)) from exc
