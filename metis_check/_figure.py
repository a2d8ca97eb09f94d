"""What a drawing shows, as plain values: the figure that `_graph` renders.

Every drawing (a runtime trace, a tree of agents, another runtime's
transcript, a plan turn log, a counterexample) is first built as a `Figure`:
items (the nodes) in the order they happened, links (the edges), groups (the
clusters: turns, batches, agents, messages), and marks (the violating item
and the slice that explains it). Building it is pure; only `_graph` knows
graphviz. So the window around a divergence (`window`), the nesting of a
child's figure into its parent's (`nest`), and what each label says are
tested without rendering anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Literal
from typing import Protocol

import attrs

Mark = Literal["", "violation", "slice"]

# How many items a figure keeps before `window` cuts it down.
DEFAULT_WINDOW = 150


class Divergent(Protocol):
    """What a drawing needs of a violation (`metis_model.Violation` has it)."""

    @property
    def invariant(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def slice(self) -> tuple[int, ...]: ...


@attrs.frozen
class Item:
    """A node. `role` picks its shape and colour (the legend says which),
    `tone` a variant of the role's colour (an allow or a deny, an ok or an
    error result); `groups` is the path of groups it sits in, outermost
    first; items of one `lane` line up in one column."""

    id: str
    role: str
    label: tuple[str, ...]
    tone: str = ""
    groups: tuple[str, ...] = ()
    lane: str = ""
    mark: Mark = ""
    tooltip: str = ""


@attrs.frozen
class Link:
    """An edge from `tail` to `head`; `role` is what it means (a causal edge,
    an execution interval, an overlap, a spawn, a result answering a call)."""

    tail: str
    head: str
    role: str = "cause"
    tone: str = ""
    mark: Mark = ""
    label: str = ""


@attrs.frozen
class Group:
    """A cluster: a turn, a batch, an agent, a message."""

    id: str
    label: str
    role: str = "turn"
    mark: Mark = ""


@attrs.frozen
class Figure:
    """A whole drawing. `chains` are runs of item ids in time order: the
    renderer puts each item of a chain on a row below the one before, so
    that the rows are time and overlapping intervals overlap on the page."""

    title: str
    items: tuple[Item, ...]
    links: tuple[Link, ...] = ()
    groups: tuple[Group, ...] = ()
    chains: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()

    def item(self, item_id: str) -> Item:
        for it in self.items:
            if it.id == item_id:
                return it
        raise KeyError(item_id)

    @property
    def marked(self) -> dict[str, Mark]:
        return {it.id: it.mark for it in self.items if it.mark}


def title_of(name: str, divergence: Divergent | None) -> str:
    if divergence is None:
        return f"{name}: no divergence"
    return f"{name}: {divergence.invariant} at {divergence.index}: {divergence.message}"


def clip(text: str, limit: int = 72) -> str:
    """One label line: control characters as spaces, at most `limit` characters."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def window(figure: Figure, limit: int = DEFAULT_WINDOW, what: str = "events") -> Figure:
    """At most `limit` items (and the marked ones), around the violation.

    Kept: every marked item, then the items nearest the violating one (the
    first marked one, or the figure's start when nothing is marked), taken
    alternately after and before it. Each run of dropped items becomes one
    `elided` item saying how many it stands for; links to dropped items go
    to it instead.
    """
    items = figure.items
    if len(items) <= limit:
        return figure
    kept = {i for i, it in enumerate(items) if it.mark}
    centre = next((i for i, it in enumerate(items) if it.mark == "violation"), None)
    if centre is None:
        centre = min(kept, default=0)
    after, before = centre, centre - 1
    while len(kept) < limit and (after < len(items) or before >= 0):
        if after < len(items):
            kept.add(after)
            after += 1
        if before >= 0 and len(kept) < limit:
            kept.add(before)
            before -= 1
    shown: list[Item] = []
    stands_for: dict[str, str] = {}
    run: list[Item] = []
    for i, it in enumerate(items):
        if i in kept:
            if run:
                shown.append(_elision(run, stands_for, what))
                run = []
            shown.append(it)
        else:
            run.append(it)
    if run:
        shown.append(_elision(run, stands_for, what))
    links: list[Link] = []
    seen: set[tuple[str, str, str]] = set()
    for link in figure.links:
        tail = stands_for.get(link.tail, link.tail)
        head = stands_for.get(link.head, link.head)
        if tail == head:
            continue
        moved = tail != link.tail or head != link.head
        new = attrs.evolve(link, tail=tail, head=head, role="elided") if moved else link
        key = (new.tail, new.head, new.role)
        if key not in seen:
            seen.add(key)
            links.append(new)
    chains = tuple(_dedupe(stands_for.get(i, i) for i in chain) for chain in figure.chains)
    used = {g for it in shown for g in it.groups}
    note = f"window: {len(kept)} of {len(items)} {what} shown (limit {limit})"
    return attrs.evolve(
        figure,
        items=tuple(shown),
        links=tuple(links),
        groups=tuple(g for g in figure.groups if g.id in used),
        chains=chains,
        notes=(*figure.notes, note),
    )


def _elision(run: Sequence[Item], stands_for: dict[str, str], what: str) -> Item:
    gap = Item(
        f"gap_{run[0].id}",
        "elided",
        (f"… {len(run)} {what} not shown …", f"{run[0].label[0]} to {run[-1].label[0]}"),
        groups=_common_prefix([it.groups for it in run]),
    )
    for it in run:
        stands_for[it.id] = gap.id
    return gap


def _common_prefix(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    first = paths[0]
    n = len(first)
    for path in paths[1:]:
        n = min(n, len(path))
        while n and path[:n] != first[:n]:
            n -= 1
    return first[:n]


def _dedupe(ids: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for i in ids:
        if not out or out[-1] != i:
            out.append(i)
    return tuple(out)


def nest(figure: Figure, prefix: str, group: Group) -> Figure:
    """`figure` inside `group`, its ids prefixed so that several fit in one drawing."""

    def rename(i: str) -> str:
        return prefix + i

    items = tuple(
        attrs.evolve(it, id=rename(it.id), groups=(group.id, *map(rename, it.groups)))
        for it in figure.items
    )
    links = tuple(
        attrs.evolve(link, tail=rename(link.tail), head=rename(link.head)) for link in figure.links
    )
    groups = (group, *(attrs.evolve(g, id=rename(g.id)) for g in figure.groups))
    chains = tuple(tuple(map(rename, chain)) for chain in figure.chains)
    return attrs.evolve(figure, items=items, links=links, groups=groups, chains=chains)


def combine(title: str, parts: Sequence[Figure], links: Iterable[Link] = ()) -> Figure:
    """Several (nested) figures as one, with links between them."""
    return Figure(
        title,
        tuple(it for f in parts for it in f.items),
        (*(link for f in parts for link in f.links), *links),
        tuple(g for f in parts for g in f.groups),
        tuple(c for f in parts for c in f.chains),
        tuple(n for f in parts for n in f.notes),
    )


def marks_by_position(keys: Sequence[int], divergence: Divergent | None) -> dict[int, Mark]:
    """Which positions of a sequence (keyed by seq or record index) are marked.

    The violating key marks one position: where the key appears more than
    once (a trace whose sequence numbers broke TRACE-1), the first that is
    out of place, else the first. The slice's keys mark their first positions.
    """
    if divergence is None:
        return {}
    where: dict[int, list[int]] = {}
    for pos, key in enumerate(keys):
        where.setdefault(key, []).append(pos)
    marks: dict[int, Mark] = {}
    for key in divergence.slice:
        if key in where:
            marks[where[key][0]] = "slice"
    places = where.get(divergence.index, [])
    if places:
        odd = [p for p in places if p != keys[p] or len(places) == 1]
        marks[(odd or places)[0]] = "violation"
    return marks


def lookup(table: Mapping[str, tuple[str, ...]], invariant: str) -> tuple[str, ...]:
    """The entry for `invariant` (`SCHED-6`), else for its family (`SCHED`)."""
    return table.get(invariant) or table.get(invariant.split("-")[0], ())
