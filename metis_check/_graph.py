"""The one DOT writer: a `Figure` as a graphviz graph, with its legend.

Every picture metis draws (runtime traces, trees of agents, transcripts,
plan turn logs, counterexamples) goes through `figure_graph`. What each
shape and colour means is in `ROLES`, `TONES` and `LINKS`, and the legend
drawn beside the figure lists exactly those the figure uses. Each SVG element
carries classes (`item decision deny violation`, `link interval`, `group
turn`, `legend`), so tests and the HTML report can find the highlighted
nodes. Rendering (running `dot`) is the caller's: `graph.pipe(format="svg")`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import attrs
import graphviz

from metis_trace import TraceEvent

from ._figure import Figure
from ._figure import Group
from ._figure import Item
from ._figure import Link

FONT = "Helvetica"
RED = "#e53935"
DARK_RED = "#b71c1c"


@attrs.frozen
class Role:
    shape: str
    fill: str
    meaning: str
    style: str = "filled"


# Node roles: the shape and default fill of each, and what the legend says.
ROLES: dict[str, Role] = {
    "loop": Role(
        "box", "#e3f2fd", "loop step: turn start, request, assistant message, results sent"
    ),
    "hook": Role("cds", "#f3e5f5", "hook run on a call, before its decision"),
    "decision": Role(
        "box", "#fff9c4", "permission decision (with class and footprint)", "diagonals,filled"
    ),
    "ask": Role("rarrow", "#fff9c4", "ask settled"),
    "effect": Role("box", "#fff3e0", "effect start / end of a call", "rounded,filled"),
    "commit": Role("box", "#ffb74d", "commit: the effect changed the world", "rounded,filled,bold"),
    "job": Role("box", "#ede7f6", "background job: handshake / done", "rounded,dashed,filled"),
    "result": Role("ellipse", "#e8f5e9", "result of a call"),
    "control": Role(
        "octagon", "#ffe0b2", "control: cancel, interrupt, resume, repair, context step"
    ),
    "spawn": Role("tab", "#d1c4e9", "child agent spawned"),
    "end": Role("doubleoctagon", "#cfd8dc", "run end"),
    "header": Role("note", "#eceff1", "header: what the file declares"),
    "message": Role("box", "#e3f2fd", "assistant message"),
    "input": Role("box", "#f1f8e9", "input message (user, results)"),
    "boundary": Role("octagon", "#ffe0b2", "compaction boundary"),
    "stored": Role("box", "#eeeeee", "stored or opaque record", "dashed,filled"),
    "call": Role("ellipse", "#fff3e0", "tool call"),
    "server_call": Role("ellipse", "#eeeeee", "server-side tool call", "dashed,filled"),
    "record": Role("box", "#e3f2fd", "turn log record", "rounded,filled"),
    "elided": Role("box", "white", "events left out of the window", "dashed"),
}

# Variants of a role's fill: (role, tone) -> (fill, what it adds to the meaning).
TONES: dict[tuple[str, str], tuple[str, str]] = {
    ("decision", "allow"): ("#c8e6c9", "allow"),
    ("decision", "ask"): ("#fff9c4", "ask"),
    ("decision", "deny"): ("#ffcdd2", "deny"),
    ("hook", "vetoed"): ("#ffcdd2", "vetoed"),
    ("ask", "approved"): ("#c8e6c9", "approved"),
    ("ask", "refused"): ("#ffcdd2", "refused"),
    ("effect", "committed"): ("#ffb74d", "ended committed"),
    ("effect", "unknown"): ("#ffe082", "outcome unknown"),
    ("result", "ok"): ("#e8f5e9", "ok"),
    ("result", "error"): ("#fce4ec", "error"),
    ("result", "other"): ("#eeeeee", "cancelled, skipped, interrupted or unknown"),
}


@attrs.frozen
class LinkStyle:
    color: str
    meaning: str
    style: str = "solid"
    penwidth: str = "1"
    arrowhead: str = "normal"
    constraint: bool = True


LINKS: dict[str, LinkStyle] = {
    "cause": LinkStyle("#455a64", "causal edge (an event depends on an earlier one)"),
    "interval": LinkStyle(
        "#1e88e566",
        "execution interval, effect start to end (over its causal edges)",
        penwidth="7",
        arrowhead="none",
    ),
    "open": LinkStyle(
        "#1e88e566", "execution interval with no end in the file", "dashed", "7", "none"
    ),
    "overlap": LinkStyle(
        RED, "overlap of intervals the invariant forbids", "dashed", "2.5", "none", False
    ),
    "spawn": LinkStyle("#5e35b1", "spawn: parent's event to the child's trace", "dashed", "1.5"),
    "answers": LinkStyle("#2e7d32", "a result answering its call", "dashed", "1.2"),
    "next": LinkStyle("#90a4ae", "the next record"),
    "elided": LinkStyle("#9e9e9e", "edge to or from left-out events", "dotted"),
}

# Interval colours by the scheduler's class of the call.
INTERVAL_TONES: dict[str, tuple[str, str]] = {
    "safe": ("#43a04799", "Safe"),
    "queue": ("#00897b99", "Queue"),
    "exclusive": ("#f4511e99", "Exclusive"),
    "background": ("#8e24aa99", "Background"),
}

GROUP_STYLE: dict[str, dict[str, str]] = {
    "turn": {"style": "rounded", "color": "#90a4ae"},
    "batch": {"style": "rounded,dashed,filled", "color": "#b0bec5", "fillcolor": "#fafafa"},
    "agent": {"style": "rounded,bold", "color": "#5e35b1"},
    "message": {"style": "rounded", "color": "#cfd8dc"},
    "file": {"style": "rounded,bold", "color": "#5e35b1"},
}


def dot_text(text: str) -> str:
    """Text for a DOT string: dot would read a backslash as an escape (`\\N` the node name)."""
    return text.replace("\\", "\\\\")


def _label(lines: Iterable[str]) -> str:
    # nohtml: a label that starts with "<" and ends with ">" stays text, not HTML.
    text: str = graphviz.nohtml("\\n".join(dot_text(line) for line in lines))
    return text


def _node_attrs(item: Item, prefix: str) -> dict[str, str]:
    role = ROLES[item.role]
    fill = TONES.get((item.role, item.tone), (role.fill, ""))[0]
    out = {
        "id": f"{prefix}{item.id}",
        "class": " ".join(c for c in ("item", item.role, item.tone, item.mark) if c),
        "shape": role.shape,
        "style": role.style,
        "fillcolor": fill,
    }
    if item.lane:
        out["group"] = item.lane
    if item.tooltip:
        out["tooltip"] = _label([item.tooltip])
    if item.role == "elided":
        out["fontcolor"] = "#757575"
    if item.mark == "violation":
        out.update(
            fillcolor=RED, fontcolor="white", color=DARK_RED, penwidth="3", style=_bold(role.style)
        )
    elif item.mark == "slice":
        out.update(color=RED, penwidth="3", style=_bold(role.style))
    return out


def _bold(style: str) -> str:
    return ",".join(dict.fromkeys([*style.split(","), "filled", "bold"]))


def _link_attrs(link: Link, prefix: str) -> dict[str, str]:
    style = LINKS[link.role]
    color = style.color
    if link.role in ("interval", "open") and link.tone in INTERVAL_TONES:
        color = INTERVAL_TONES[link.tone][0]
    out = {
        "id": f"{prefix}{link.tail}__{link.head}__{link.role}",
        "class": " ".join(c for c in ("link", link.role, link.tone, link.mark) if c),
        "color": color,
        "style": style.style,
        "penwidth": style.penwidth,
        "arrowhead": style.arrowhead,
    }
    if not style.constraint:
        out["constraint"] = "false"
    if link.label:
        out["label"] = _label([link.label])
        out["fontcolor"] = color[:7]
    if link.mark:
        out.update(color=RED if link.role != "interval" else color, penwidth="3")
        if link.role == "cause":
            out["fontcolor"] = RED
    return out


def _group_attrs(group: Group, prefix: str) -> dict[str, str]:
    out = {
        "id": f"{prefix}{group.id}",
        "class": " ".join(c for c in ("group", group.role, group.mark) if c),
        "label": _label([group.label]),
        "fontsize": "10",
        "labeljust": "l",
        **GROUP_STYLE.get(group.role, GROUP_STYLE["turn"]),
    }
    if group.mark:
        out.update(color=RED, penwidth="3")
    return out


def figure_graph(figure: Figure, *, id_prefix: str = "") -> graphviz.Digraph:
    """The figure as a graphviz graph: its groups as clusters, its chains as
    time-ordered rows (invisible edges), its links, and the legend.

    `id_prefix` starts every SVG id, so several drawings fit in one HTML page."""
    title = [figure.title, *figure.notes]
    g = graphviz.Digraph(
        "metis",
        graph_attr={
            "rankdir": "TB",
            "newrank": "true",
            "label": _label(title),
            "labelloc": "t",
            "labeljust": "l",
            "fontname": FONT,
            "fontsize": "12",
            "nodesep": "0.25",
            "ranksep": "0.22",
            "id": f"{id_prefix}figure",
            "class": "figure",
        },
        node_attr={"fontname": FONT, "fontsize": "10", "margin": "0.08,0.03", "height": "0.3"},
        edge_attr={"fontname": FONT, "fontsize": "9", "arrowsize": "0.6"},
    )
    groups = {grp.id: grp for grp in figure.groups}
    _emit(g, figure.items, groups, (), id_prefix)
    known = {it.id for it in figure.items}
    for chain in figure.chains:
        for tail, head in itertools.pairwise(chain):
            if tail in known and head in known:
                g.edge(tail, head, style="invis", weight="0")
    for link in figure.links:
        if link.tail in known and link.head in known:
            g.edge(link.tail, link.head, **_link_attrs(link, id_prefix))
    _legend(g, figure, id_prefix)
    return g


def _emit(
    g: graphviz.Digraph,
    items: tuple[Item, ...],
    groups: dict[str, Group],
    depth: tuple[str, ...],
    prefix: str,
) -> None:
    """The items at `depth` (a group path) and, in order of appearance, the
    groups one level below it, as nested clusters."""
    below: dict[str, list[Item]] = {}
    for item in items:
        path = item.groups
        if path[: len(depth)] != depth:
            continue
        if len(path) == len(depth):
            g.node(item.id, _label(item.label), **_node_attrs(item, prefix))
        else:
            below.setdefault(path[len(depth)], []).append(item)
    for gid, members in below.items():
        group = groups.get(gid, Group(gid, gid))
        with g.subgraph(name=f"cluster_{gid}") as sub:
            sub.attr(**_group_attrs(group, prefix))
            _emit(sub, tuple(members), groups, (*depth, gid), prefix)


def _legend(g: graphviz.Digraph, figure: Figure, prefix: str) -> None:
    """A legend cluster: one sample per node role and tone, mark and link role used."""
    rows: list[tuple[str, dict[str, str]]] = []
    for role, tone in dict.fromkeys((it.role, it.tone) for it in figure.items):
        meaning = ROLES[role].meaning
        if (role, tone) in TONES:
            meaning = f"{meaning}: {TONES[(role, tone)][1]}"
        sample = _node_attrs(Item("sample", role, ()), prefix)
        if (role, tone) in TONES:
            sample["fillcolor"] = TONES[(role, tone)][0]
        rows.append((meaning, sample))
    marks = {it.mark for it in figure.items} | {grp.mark for grp in figure.groups}
    if "violation" in marks:
        rows.append(
            ("the violating event", _node_attrs(Item("v", "effect", (), mark="violation"), prefix))
        )
    if "slice" in marks:
        rows.append(
            (
                "in the slice that explains it",
                _node_attrs(Item("s", "effect", (), mark="slice"), prefix),
            )
        )
    with g.subgraph(name="cluster_legend") as legend:
        legend.attr(
            label="legend",
            id=f"{prefix}legend",
            fontsize="10",
            style="rounded",
            color="#bdbdbd",
            **{"class": "legend"},
        )
        previous = ""
        for n, (meaning, sample) in enumerate(rows):
            name = f"legend_{n}"
            sample.update(id=f"{prefix}{name}", label=_label([meaning]), fontsize="9")
            # A sample is no item of the figure: `item` (what tests and the report count) goes.
            sample["class"] = "legend-item " + sample["class"].removeprefix("item ")
            sample.pop("group", None)
            legend.node(name, **sample)
            if previous:
                legend.edge(previous, name, style="invis")
            previous = name
        links = dict.fromkeys(
            (link.role, link.tone if link.role in ("interval", "open") else "")
            for link in figure.links
        )
        for n, (role, tone) in enumerate(links):
            style = LINKS[role]
            meaning = style.meaning
            if tone in INTERVAL_TONES:
                meaning = f"{meaning}: {INTERVAL_TONES[tone][1]} call"
            tail, head = f"legend_l{n}a", f"legend_l{n}b"
            legend.node(tail, "", shape="point", width="0.04", id=f"{prefix}{tail}")
            legend.node(
                head,
                _label([meaning]),
                shape="plaintext",
                fontsize="9",
                id=f"{prefix}{head}",
                **{"class": "legend-link"},
            )
            sample = _link_attrs(Link(tail, head, role, tone), prefix)
            sample.pop("constraint", None)
            sample["class"] = "legend-sample " + sample["class"].removeprefix("link ")
            legend.edge(tail, head, **sample)
            if previous:
                legend.edge(previous, tail, style="invis")
            previous = head


def trace_dot(events: Iterable[TraceEvent], name: str = "trace") -> str:
    """Graphviz DOT text of a trace's causal graph (render with `dot -Tsvg`):
    `trace_figure` drawn by `figure_graph`, legend included."""
    from ._figure_trace import trace_figure

    figure = trace_figure(None, list(events), name=name, limit=None)
    return str(figure_graph(figure).source)
