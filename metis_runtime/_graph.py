"""The trace as a graph: networkx for analysis, DOT text for pictures.

Nodes are event `seq`s carrying the event's fields as attributes; an edge
`c -> s` for every `c` in event `s`'s `causes`, so edges point forward in
time and the graph is a DAG (TRACE-1).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import networkx as nx

from metis_model.trace import InputError, TraceEvent

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


def _label(event: TraceEvent) -> str:
    data = event.model_dump(mode="json", exclude={"seq", "t", "causes", "kind"})
    bits = [f"{event.seq} {event.kind}"]
    for key in ("turn", "occ", "decision", "stage", "outcome", "status", "job", "reason"):
        if key in data and data[key] not in (None, ""):
            bits.append(f"{key}={data[key]}")
    if data.get("calls"):
        bits.append("calls=" + ",".join(c["tool"] for c in data["calls"]))
    return "\\n".join(b.replace("\\", "\\\\").replace('"', '\\"') for b in bits)


def trace_dot(events: Iterable[TraceEvent], name: str = "trace") -> str:
    """Graphviz DOT text of the causal graph (render with `dot -Tsvg`)."""
    lines = [f"digraph {json.dumps(name)} {{", "  rankdir=TB;", "  node [shape=box];"]
    edges: list[str] = []
    for event in events:
        lines.append(f'  n{event.seq} [label="{_label(event)}"];')
        edges.extend(f"  n{c} -> n{event.seq};" for c in event.causes)
    lines.extend(edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


def load_trace_events(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """The events of a trace file; `MetisRuntimeError` naming the line if bad."""
    try:
        return read_trace_path(path)[1]
    except InputError as exc:
        raise MetisRuntimeError(str(exc)) from exc
