"""A plan turn log as a `Figure` (drawn by `metis_trace`'s renderer).

The header, then each record in order, one row each; a record's label holds
its kind and its own scalar fields (a step's tool, status and `committed`,
a path's outcome, a resume's answer). The record a violation names is
marked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from enum import Enum

from metis_trace import TurnHeader
from metis_trace import TurnRecord

from ._figure import DEFAULT_WINDOW
from ._figure import Divergent
from ._figure import Figure
from ._figure import Item
from ._figure import Link
from ._figure import Mark
from ._figure import clip
from ._figure import title_of
from ._figure import window

_SKIP = frozenset({"kind", "format", "version"})
_MAX_FIELDS = 6


def _scalars(record: TurnRecord | TurnHeader, skip: frozenset[str] = _SKIP) -> list[str]:
    out = []
    for name, value in record:
        if name in skip or value is None or isinstance(value, dict | list | tuple):
            continue
        if isinstance(value, bool):
            shown = "true" if value else "false"
        elif isinstance(value, Enum):
            shown = str(value.value)
        else:
            shown = str(value)
        out.append(clip(f"{name}={shown}"))
    return out[:_MAX_FIELDS]


def turn_log_figure(
    header: TurnHeader,
    records: Sequence[TurnRecord],
    divergence: Divergent | None = None,
    *,
    name: str = "",
    limit: int | None = DEFAULT_WINDOW,
) -> Figure:
    """The figure of one turn log, cut to `limit` records around the divergence."""
    fields = frozenset({*_SKIP, "request_key", "conversation", "runtime", "targets"})
    items = [Item("h", "header", ("header", *_scalars(header, fields)))]
    for i, record in enumerate(records):
        mark: Mark = ""
        if divergence is not None and divergence.index == i:
            mark = "violation"
        elif divergence is not None and i in divergence.slice:
            mark = "slice"
        label = (f"{i} {record.kind}", *_scalars(record))
        items.append(Item(f"r{i}", "record", label, mark=mark))
    links = [Link(a.id, b.id, "next") for a, b in itertools.pairwise(items)]
    figure = Figure(
        title_of(name or header.turn_id, divergence),
        tuple(items),
        tuple(links),
        (),
        (tuple(it.id for it in items),),
    )
    return window(figure, limit, "records") if limit is not None else figure
