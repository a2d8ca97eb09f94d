"""Another runtime's transcript as a `Figure` (drawn by `metis_trace`'s renderer).

The transcript is read into the same tree the closure check walks
(`_tree.Tree`): each message is a group holding its own item and one item
per call or result (with the provider's id and the file line), a message
links to the next one on its path, and a result links back to the call it
answers. The violating call or result (found by its file line) is marked,
with the records of its slice.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence

from .._figure import DEFAULT_WINDOW
from .._figure import Divergent
from .._figure import Figure
from .._figure import Group
from .._figure import Item
from .._figure import Link
from .._figure import Mark
from .._figure import clip
from .._figure import combine
from .._figure import nest
from .._figure import title_of
from .._figure import window
from ._check import TranscriptFormat
from ._check import parse_transcript
from ._tree import Node
from ._tree import Occ
from ._tree import Tree

_ROLE = {"model": "message", "input": "input", "boundary": "boundary", "opaque": "stored"}


def transcript_figure(
    lines: Iterable[str] | str,
    fmt: TranscriptFormat,
    divergence: Divergent | None = None,
    *,
    name: str = "transcript",
    limit: int | None = DEFAULT_WINDOW,
) -> Figure:
    """The figure of one transcript file, cut to `limit` items around the divergence."""
    if isinstance(lines, str):
        lines = lines.split("\n")
    tree = parse_transcript(lines, fmt, name).tree
    figure = tree_of_messages(tree, divergence, title_of(name, divergence))
    return window(figure, limit, "items") if limit is not None else figure


def claude_code_figure(
    main: Iterable[str] | str,
    subagents: Mapping[str, Iterable[str] | str],
    violations: Sequence[Divergent] = (),
    *,
    name: str = "main",
    limit: int | None = DEFAULT_WINDOW,
) -> Figure:
    """A Claude Code session and its subagents' files, each a group. A violation
    belongs to the file its message starts with (`check_claude_code_tree`
    writes them so); the session's own carry no prefix."""
    files = [(name, main), *sorted(subagents.items())]
    parts: list[Figure] = []
    for n, (file, lines) in enumerate(files):
        mine = [v for v in violations if _owner(v, files) == n]
        part = transcript_figure(
            lines, "claude-code", mine[0] if mine else None, name=file, limit=limit
        )
        group = Group(f"f{n}", clip(file, 140), "file", "violation" if mine else "")
        parts.append(nest(part, f"f{n}_", group))
    return combine(title_of(name, violations[0] if violations else None), parts)


def _owner(v: Divergent, files: Sequence[tuple[str, object]]) -> int:
    """The file a violation belongs to: the subagent file its message names, else the session."""
    return next((n for n, (f, _) in enumerate(files) if n and v.message.startswith(f"{f}: ")), 0)


def tree_of_messages(tree: Tree, divergence: Divergent | None, title: str) -> Figure:
    items: list[Item] = []
    links: list[Link] = []
    groups: list[Group] = []
    calls_at: dict[int, dict[str, str]] = {}
    for number, node in enumerate(tree.nodes):
        gid = f"m{number}"
        groups.append(Group(gid, node.describe(), "message"))
        head = f"n{number}"
        items.append(Item(head, _ROLE[node.kind], _node_label(node), groups=(gid,)))
        if node.parent is not None:
            links.append(Link(f"n{node.parent}", head, "next"))
        mine: dict[str, str] = {}
        for j, call in enumerate(node.calls):
            cid = f"{head}c{j}"
            role = "call" if call.closable else "server_call"
            items.append(Item(cid, role, _occ_label("call", call), groups=(gid,)))
            mine.setdefault(call.id, cid)
        calls_at[number] = mine
        for j, result in enumerate(node.results):
            rid = f"{head}r{j}"
            items.append(Item(rid, "result", _occ_label("result", result), groups=(gid,)))
            answered = _answered(tree, node, result.id, calls_at)
            if answered is not None:
                links.append(Link(answered, rid, "answers"))
    marked = _marks(tree, divergence)
    items = [
        Item(it.id, it.role, it.label, it.tone, it.groups, it.lane, marked.get(it.id, ""))
        for it in items
    ]
    # Records in file order, one row each: the order they were written in.
    chain = (tuple(it.id for it in items),)
    return Figure(title, tuple(items), tuple(links), tuple(groups), chain)


def _node_label(node: Node) -> tuple[str, ...]:
    where = f"line {node.line}" if node.line is not None else f"record {node.index}"
    lines = [f"{_ROLE[node.kind]} {node.index} ({where})"]
    if node.calls:
        lines.append(f"{len(node.calls)} call(s)")
    if node.results:
        lines.append(f"{len(node.results)} result(s)")
    return tuple(lines)


def _occ_label(what: str, occ: Occ) -> tuple[str, ...]:
    where = f"line {occ.line}" if occ.line is not None else f"record {occ.index}"
    label = [clip(f"{what} {occ.id}"), where]
    if occ.after is not None:
        label.append(clip(f"after a {occ.after.type} block"))
    return tuple(label)


def _answered(
    tree: Tree, node: Node, call_id: str, calls_at: Mapping[int, dict[str, str]]
) -> str | None:
    """The call a result answers: the nearest one with its id up the path."""
    parent = node.parent
    while parent is not None:
        found = calls_at.get(parent, {}).get(call_id)
        if found is not None:
            return found
        parent = tree.nodes[parent].parent
    return None


def _marks(tree: Tree, divergence: Divergent | None) -> dict[str, Mark]:
    """The violating call or result (its record index, and its line when the
    violation has one), and every record of the slice."""
    if divergence is None:
        return {}
    line = getattr(divergence, "line", None)
    marks: dict[str, Mark] = {}
    bad: str | None = None
    for number, node in enumerate(tree.nodes):
        head = f"n{number}"
        if node.index in divergence.slice:
            marks[head] = "slice"
        occs = [(f"{head}c{j}", o) for j, o in enumerate(node.calls)]
        occs += [(f"{head}r{j}", o) for j, o in enumerate(node.results)]
        for oid, occ in occs:
            if occ.index in divergence.slice:
                marks[oid] = "slice"
            if bad is None and occ.index == divergence.index and (line is None or occ.line == line):
                bad = oid
    if bad is None:
        bad = next((f"n{i}" for i, n in enumerate(tree.nodes) if n.index == divergence.index), None)
    if bad is not None:
        marks[bad] = "violation"
    return marks
