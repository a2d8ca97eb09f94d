"""Small readers and builders the mechanisms' workloads share.

Readers take what a trace shows (decisions, results, the header's recorded
settings); builders make the scripted turns (one call id per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_trace import Assistant
from metis_trace import DecisionEvent
from metis_trace import Result
from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._pieces import Spec
from ._workload import Call
from ._workload import Turn

__all__ = [
    "Spec",
    "Traces",
    "answered",
    "calls_of",
    "changed_files",
    "decisions_of",
    "recorded_rules",
    "results_of",
    "script",
]

Traces = Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]]


def script(*batches: Sequence[Spec], final: str = "Done.") -> tuple[Turn, ...]:
    """Turns of calls (ids `m<turn>_<i>`), then the final answer."""
    turns = [
        Turn(
            calls=tuple(
                Call(id=f"m{t}_{i}", tool=tool, input=inp) for i, (tool, inp) in enumerate(b)
            )
        )
        for t, b in enumerate(batches, 1)
    ]
    return (*turns, Turn(text=final))


def calls_of(events: Sequence[TraceEvent]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each occurrence's tool and input, as the trace's assistant messages hold them."""
    return {
        c.occ: (c.tool, dict(c.input)) for e in events if isinstance(e, Assistant) for c in e.calls
    }


def decisions_of(
    traces: Traces, depth: int | None = 0
) -> Iterator[tuple[TraceHeader, DecisionEvent]]:
    for header, events in traces.values():
        if depth is None or header.depth == depth:
            for e in events:
                if isinstance(e, DecisionEvent):
                    yield header, e


def results_of(events: Sequence[TraceEvent]) -> dict[str, Result]:
    return {e.occ: e for e in events if isinstance(e, Result)}


def answered(traces: Traces) -> Iterator[tuple[TraceHeader, str, dict[str, Any], Result]]:
    """Every call that has a result, in every trace: (header, tool, input, result)."""
    for header, events in traces.values():
        calls, results = calls_of(events), results_of(events)
        for occ, (tool, inp) in calls.items():
            if occ in results:
                yield header, tool, inp, results[occ]


def recorded_rules(header: TraceHeader) -> list[dict[str, Any]]:
    """The header's `meta.permissions.rules` (each rule as the gate held it)."""
    meta = header.meta.get("permissions")
    rules = meta.get("rules") if isinstance(meta, dict) else None
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def changed_files(
    folder: Path, expected: Mapping[str, str], base: Path, skip: str = ""
) -> list[str]:
    """The files below `folder` (named relative to `base`) whose text is not
    the `expected` one: changed, or new. A part named `skip` is passed over."""
    if not folder.is_dir():
        return []
    return [
        name
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not (skip and skip in path.parts)
        if expected.get(name := str(path.relative_to(base))) != path.read_text(errors="replace")
    ]
