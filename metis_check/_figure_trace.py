"""A runtime trace (or a tree of them) as a `Figure`.

Events are items, grouped per turn and, inside it, per batch (the calls of
one assistant message); each call's events share a lane, and every event
sits on its own row in `seq` order, so the execution interval of a call (a
bar from its `effect_start` to its `effect_end`) overlaps another's on the
page exactly when they overlapped in time. The violating event and its
slice are marked; each slice event's label adds the facts its invariant
reads (`FACTS`): the decision and stage, the class and key, `committed`,
the cause of a cancel, the footprints.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from metis_trace._events import TraceEvent
from metis_trace._events import TraceHeader

from ._figure import DEFAULT_WINDOW
from ._figure import Divergent
from ._figure import Figure
from ._figure import Group
from ._figure import Item
from ._figure import Link
from ._figure import Mark
from ._figure import clip
from ._figure import combine
from ._figure import lookup
from ._figure import marks_by_position
from ._figure import nest
from ._figure import title_of
from ._figure import window

ROLE_OF_KIND: Mapping[str, str] = {
    "turn_start": "loop",
    "request": "loop",
    "assistant": "loop",
    "results_sent": "loop",
    "compaction": "control",
    "stream_repair": "control",
    "hook": "hook",
    "decision": "decision",
    "ask_resolved": "ask",
    "effect_start": "effect",
    "commit": "commit",
    "effect_end": "effect",
    "handshake": "job",
    "job_done": "job",
    "result": "result",
    "cancel": "control",
    "interrupt": "control",
    "signal": "control",
    "stop_request": "control",
    "sink_error": "control",
    "resume": "control",
    "repair": "control",
    "spawn": "spawn",
    "run_end": "end",
}

# What every label of a kind shows.
BASE: Mapping[str, tuple[str, ...]] = {
    "turn_start": ("turn",),
    "request": ("turn",),
    "assistant": ("calls", "stop_reason"),
    "results_sent": ("occs",),
    "compaction": ("step", "calls_removed", "results_removed"),
    "stream_repair": ("problem",),
    "hook": ("hook", "vetoed"),
    "decision": ("decision", "stage", "cls", "key"),
    "ask_resolved": ("approved", "resolver"),
    "commit": ("outcome",),
    "effect_end": ("outcome", "committed"),
    "handshake": ("job",),
    "job_done": ("job", "outcome"),
    "result": ("status",),
    "cancel": ("cause", "occs"),
    "interrupt": ("reason",),
    "signal": ("name",),
    "stop_request": ("via",),
    "sink_error": ("sink",),
    "repair": ("stubbed", "unknown"),
    "spawn": ("agent_id", "child_mode"),
    "run_end": ("status",),
}

# The facts each invariant (or family) reads, added to its slice events' labels.
FACTS: Mapping[str, tuple[str, ...]] = {
    "TRACE": ("t", "causes"),
    "LOOP": ("turn", "t", "stop_reason", "outcome", "status"),
    "PERM": (
        "decision",
        "stage",
        "rule",
        "facts",
        "route",
        "approved",
        "resolver",
    ),
    "AUTH": ("decision", "stage", "approved", "resolver", "route", "calls"),
    "SCHED": ("cls", "key", "t", "outcome", "status"),
    "SCHED-4": ("cls", "job", "outcome", "status"),
    "SCHED-5": (
        "cause",
        "occs",
        "limit_s",
        "reason",
        "t",
        "status",
        "outcome",
        "causes",
        "name",
        "via",
        "sink",
    ),
    "SCHED-6": ("cls", "reads", "writes", "t"),
    "RETRY": ("outcome", "committed", "stubbed", "unknown", "status"),
    "CLOSE": (
        "occs",
        "call_ids",
        "call_id",
        "status",
        "calls_removed",
        "results_removed",
        "stubbed",
        "unknown",
        "messages",
    ),
    "CHILD": (
        "hook",
        "vetoed",
        "reason",
        "decision",
        "stage",
        "child_mode",
        "child_tools",
        "parent_mode",
        "parent_tools",
    ),
}

_RESULT_TONES = {"ok": "ok", "error": "error"}
# Interval invariants: a marked pair of overlapping intervals is drawn as an overlap.
_OVERLAP_FAMILIES = ("SCHED-1", "SCHED-2", "SCHED-3", "SCHED-6")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(_value(v) for v in value) if value else "[]"
    if isinstance(value, dict):
        return " ".join(f"{k}={_value(v)}" for k, v in value.items() if v not in (None, "", []))
    return str(value)


def _fact(data: Mapping[str, Any], name: str) -> list[str]:
    if name not in data or data[name] is None:
        return []
    value = data[name]
    if name == "calls":
        if not value:
            return []
        return ["calls=" + ",".join(f"{c['occ']}:{c['tool']}" for c in value)]
    if name == "facts":
        facts = dict(value)
        rules = facts.pop("rules", [])
        lines = ["facts: " + _value({k: v for k, v in facts.items() if v is not False})]
        lines += [f"matched {r['behavior']} {r['source']} {r['pattern']!r}" for r in rules]
        return lines
    if name == "rule":
        return [f"rule={value['behavior']} {value['source']} {value['pattern']!r}"]
    if name == "messages":
        return ["messages=" + " | ".join(f"{m['role']}:{','.join(m['blocks'])}" for m in value)]
    if name == "key" and value == "":
        return []
    return [f"{name}={_value(value)}"]


def event_label(event: TraceEvent, tool: str = "", extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The lines of an event's label: seq and kind (and the call, with its
    tool), the kind's usual fields, then `extra` fields not shown yet."""
    data = event.model_dump(mode="json")
    head = f"{event.seq} {event.kind}"
    occ = data.get("occ")
    if occ:
        head += f" {occ}" + (f" {tool}" if tool else "")
    elif event.kind in ("turn_start", "request", "assistant", "cancel", "results_sent"):
        head += f" turn {data['turn']}"
    names = [n for n in BASE.get(event.kind, ()) if not (n == "turn" and "turn" in head)]
    names += [n for n in extra if n not in names and n not in ("occ", "kind", "seq")]
    lines = [head]
    for name in names:
        lines += _fact(data, name)
    return tuple(clip(line) for line in lines)


def _tone(event: TraceEvent) -> str:
    kind = event.kind
    data = event.model_dump(mode="json")
    if kind == "decision":
        return str(data["decision"])
    if kind == "hook":
        return "vetoed" if data["vetoed"] else ""
    if kind == "ask_resolved":
        return "approved" if data["approved"] else "refused"
    if kind == "effect_end":
        if data.get("committed"):
            return "committed"
        return "unknown" if data["outcome"] == "unknown" else ""
    if kind == "result":
        return _RESULT_TONES.get(str(data["status"]), "other")
    return ""


def _turn_of(occ: str) -> str:
    return occ.split(".", 1)[0]


def trace_figure(
    header: TraceHeader | None,
    events: Sequence[TraceEvent],
    divergence: Divergent | None = None,
    *,
    name: str = "",
    limit: int | None = DEFAULT_WINDOW,
) -> Figure:
    """The figure of one trace, cut to `limit` events around the divergence."""
    tools: dict[str, str] = {}
    classes: dict[str, str] = {}
    for e in events:
        for call in getattr(e, "calls", ()):
            tools.setdefault(call.occ, call.tool)
        if e.kind == "decision":
            classes.setdefault(getattr(e, "occ", ""), str(getattr(e, "cls", "")))
    marks = marks_by_position([e.seq for e in events], divergence)
    extra = lookup(FACTS, divergence.invariant) if divergence is not None else ()
    groups: dict[str, Group] = {}
    items: list[Item] = []
    turn = ""
    for pos, e in enumerate(events):
        occ = str(getattr(e, "occ", "") or "")
        mark: Mark = marks.get(pos, "")
        label = event_label(e, tools.get(occ, ""), extra if mark else ())
        if e.kind == "turn_start":
            turn = str(getattr(e, "turn", ""))
        path = _place(e, occ, turn, groups, tools)
        items.append(
            Item(
                f"e{pos}",
                ROLE_OF_KIND.get(e.kind, "control"),
                label,
                tone=_tone(e),
                groups=path,
                lane=f"lane_{occ}" if occ else "",
                mark=mark,
            )
        )
    bars = _intervals(events, classes, marks, divergence)
    along = {(b.tail, b.head) for b in bars if b.role in ("interval", "open")}
    links = [c for c in _causal_links(events, marks) if (c.tail, c.head) not in along or c.mark]
    links += bars
    figure = Figure(
        title_of(name or (header.run_id if header else "trace"), divergence),
        tuple(items),
        tuple(links),
        tuple(groups.values()),
        (tuple(it.id for it in items),),
        _header_notes(header),
    )
    return window(figure, limit) if limit is not None else figure


def _header_notes(header: TraceHeader | None) -> tuple[str, ...]:
    if header is None:
        return ()
    hooks = ",".join(f"{h.id}[{h.matcher}]" for h in getattr(header, "hooks", ()))
    line = f"agent {header.agent_id}, mode {header.mode.value}, tools {','.join(header.tools)}"
    return (clip(line + (f", hooks {hooks}" if hooks else ""), 120),)


def _place(
    e: TraceEvent, occ: str, turn: str, groups: dict[str, Group], tools: Mapping[str, str]
) -> tuple[str, ...]:
    """The groups an event sits in: its turn, and its batch for a call's event."""
    if e.kind in ("interrupt", "resume", "repair", "run_end"):
        return ()
    own = str(getattr(e, "turn", "")) if hasattr(e, "turn") else ""
    t = _turn_of(occ) if occ else (own or turn)
    if not t:
        return ()
    tid = f"turn{t}"
    groups.setdefault(tid, Group(tid, f"turn {t}", "turn"))
    if not occ and e.kind != "spawn":
        return (tid,)
    bid = f"batch{t}"
    calls = sum(1 for o in tools if _turn_of(o) == t)
    groups.setdefault(bid, Group(bid, f"batch of turn {t}: {calls} call(s)", "batch"))
    return (tid, bid)


def _causal_links(events: Sequence[TraceEvent], marks: Mapping[int, Mark]) -> list[Link]:
    """An edge from each cause to its event; a cause is the latest event with
    that seq before it (or after it, for an edge that breaks TRACE-1)."""
    latest: dict[int, int] = {}
    every: dict[int, int] = {}
    for pos, e in enumerate(events):
        every.setdefault(e.seq, pos)
    links: list[Link] = []
    for pos, e in enumerate(events):
        for cause in e.causes:
            source = latest.get(cause, every.get(cause))
            if source is None or source == pos:
                continue
            bad = source > pos
            mark: Mark = "violation" if bad or marks.get(pos) == "violation" else ""
            links.append(Link(f"e{source}", f"e{pos}", "cause", mark=mark))
        latest[e.seq] = pos
    return links


def _intervals(
    events: Sequence[TraceEvent],
    classes: Mapping[str, str],
    marks: Mapping[int, Mark],
    divergence: Divergent | None,
) -> list[Link]:
    """Each call's execution interval, from its effect start to its effect
    end (a background call's from handshake to job done): a bar along the
    call's lane, through the events between (a commit). An interval with no
    end in the file runs on to the call's last event. For an interval
    invariant, the marked calls' overlapping intervals are linked."""
    lanes: dict[str, list[int]] = {}
    starts: dict[str, int] = {}
    spans: list[tuple[str, int, int | None]] = []
    for pos, e in enumerate(events):
        occ = str(getattr(e, "occ", "") or "")
        if not occ:
            continue
        lanes.setdefault(occ, []).append(pos)
        if e.kind in ("effect_start", "handshake"):
            starts[occ] = pos
        elif e.kind in ("effect_end", "job_done") and occ in starts:
            spans.append((occ, starts.pop(occ), pos))
    spans += [(occ, start, None) for occ, start in starts.items()]
    links: list[Link] = []
    for occ, start, end in spans:
        stop = end if end is not None else lanes[occ][-1]
        path = [p for p in lanes[occ] if start <= p <= stop]
        role = "interval" if end is not None else "open"
        for tail, head in itertools.pairwise(path):
            links.append(Link(f"e{tail}", f"e{head}", role, tone=classes.get(occ, "")))
    if divergence is None or not divergence.invariant.startswith(_OVERLAP_FAMILIES):
        return links
    marked = {
        occ for pos, mark in marks.items() if (occ := str(getattr(events[pos], "occ", "") or ""))
    }
    shown = sorted((s for s in spans if s[0] in marked), key=lambda s: s[1])
    for i, (a, a0, a1) in enumerate(shown):
        for b, b0, _ in shown[i + 1 :]:
            if a1 is None or b0 < a1:  # b started while a was running
                label = f"{a} and {b} overlap"
                links.append(Link(f"e{a0}", f"e{b0}", "overlap", mark="violation", label=label))
    return links


def tree_figure(
    traces: Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]],
    violations: Sequence[Divergent] = (),
    *,
    name: str = "tree",
    limit: int | None = DEFAULT_WINDOW,
) -> Figure:
    """A tree of agents: each trace a cluster (root first, then by depth), a
    spawn linked to its child's trace. A violation goes to the trace whose
    name starts its message (`check_trace_tree` writes them so): its first
    event-level violation is marked in that trace, and a violation about
    the trace as a whole (its header, its link to its parent) marks the cluster."""
    names = sorted(traces, key=lambda n: (traces[n][0].depth, n))
    own: dict[str, list[Divergent]] = {n: [] for n in names}
    for v in violations:
        owner = max((n for n in names if v.message.startswith(f"{n}: ")), key=len, default=None)
        if owner is not None:
            own[owner].append(v)
    parts: list[Figure] = []
    first_item: dict[str, str] = {}
    spawns: list[tuple[str, str]] = []
    for n, trace_name in enumerate(names):
        header, events = traces[trace_name]
        found = own[trace_name]
        at_event = next((v for v in found if _is_event_level(v, events)), None)
        part = trace_figure(header, events, at_event, name=trace_name, limit=limit)
        depth = f"depth {header.depth}"
        label = f"{header.agent_id} ({header.mode.value}, {depth}): {trace_name}"
        if found:
            label += f" — {found[0].invariant}: {found[0].message.removeprefix(trace_name + ': ')}"
        group = Group(f"a{n}", clip(label, 140), "agent", "violation" if found else "")
        prefix = f"a{n}_"
        nested = nest(part, prefix, group)
        parts.append(nested)
        if nested.items:
            first_item[header.agent_id] = nested.items[0].id
        for pos, e in enumerate(events):
            if e.kind == "spawn":
                spawns.append((f"{prefix}e{pos}", str(getattr(e, "agent_id", ""))))
    links = [
        Link(tail, first_item[child], "spawn")
        for tail, child in spawns
        if child in first_item and tail in {it.id for p in parts for it in p.items}
    ]
    first = violations[0] if violations else None
    return combine(title_of(name, first), parts, links)


def _is_event_level(v: Divergent, events: Sequence[TraceEvent]) -> bool:
    """A violation of an event of the trace (not of its header or its links)."""
    line = getattr(v, "line", None)
    if line == 1:  # the header's line: about the trace as a whole
        return False
    return any(e.seq == v.index for e in events) and (bool(v.slice) or line is None)
