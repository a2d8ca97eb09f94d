"""Which calls of a batch may run together (specs/scheduler.md, "Execution
intervals" and "Footprints").

`interference` names the scheduling invariant that starting a call now would
break: an Exclusive call runs alone (SCHED-1) and after every earlier call
finished (SCHED-3), Queue calls of one key run one at a time, in call order
(SCHED-2), and a Safe call never overlaps a Queue or Exclusive call whose
write footprint holds what it reads (SCHED-6, `footprints_conflict`). A Queue
`edit` call's key names what it writes (SCHED-2's key clause,
`queue_key_problem`). `step`, `startable` and the fast replay share these,
reading a call through `CallLike`; `footprint_partners` is SCHED-6's relation
over a whole batch, in time linear in its paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from metis_trace import CallClass
from metis_trace import DecisionEvent
from metis_trace import ToolKind

from ._loop_state import _FOREGROUND
from ._loop_state import _WRITERS
from ._loop_state import CallLike


def paths_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two footprints share a path: one path is the other or lies below it."""
    for x in a:
        for y in b:
            if x == y or x == "/" or y == "/":
                return True
            short, long = (x, y) if len(x) < len(y) else (y, x)
            if long.startswith(short.rstrip("/") + "/"):
                return True
    return False


def footprints_conflict(a: CallLike, b: CallLike) -> bool:
    """SCHED-6's relation: one is Safe and reads inside what the other, a Queue
    or Exclusive call, writes."""
    if a.cls is CallClass.SAFE and b.cls in _WRITERS:
        return paths_overlap(a.reads, b.writes)
    if b.cls is CallClass.SAFE and a.cls in _WRITERS:
        return paths_overlap(b.reads, a.writes)
    return False


QUEUE_FILE_KEY = "file:"


def queue_edit(e: DecisionEvent) -> bool:
    """Whether SCHED-2's key clause applies to the decision: a Queue `edit` call."""
    return e.cls is CallClass.QUEUE and e.facts.kind is ToolKind.EDIT


def _within(path: str, named: str) -> bool:
    """Whether `path` is `named` or lies below it."""
    return path == named or path.startswith(named.rstrip("/") + "/")


def queue_key_problem(e: DecisionEvent) -> str | None:
    """SCHED-2's key clause: a Queue `edit` call writes only within what its
    key names (`file:PATH`: that file, or what lies below the path, as a
    footprint path covers), so that every edit of one file waits in one queue.
    An edit call that writes more, or under another key, could overlap a
    Queue edit of the same file under that file's key: a lost parallel edit.
    (A Queue `exec` call, an MCP server's or an agent tool's, writes nothing
    a key could name: not checked.)"""
    if not queue_edit(e):
        return None
    key = e.key or ""
    named = key[len(QUEUE_FILE_KEY) :] if key.startswith(QUEUE_FILE_KEY) else None
    for path in e.writes:
        if named is None or not _within(path, named):
            return (
                f"{e.occ}: a Queue edit call writes {path}, which its key "
                f"{key or 'None'} does not name"
            )
    return None


def interference(calls: Sequence[CallLike], call: CallLike) -> tuple[str, str, Any] | None:
    """The scheduling invariant that starting `call` now would break, with the
    call it conflicts with."""
    for other in calls:
        if (
            other.running
            and other.cls in _FOREGROUND
            and (call.cls is CallClass.EXCLUSIVE or other.cls is CallClass.EXCLUSIVE)
        ):
            return "SCHED-1", f"{call.occ} ({call.cls}) overlaps {other.occ} ({other.cls})", other
    for other in calls:
        if other.index >= call.index or not other.admitted or other.finished or other.closed:
            continue
        if call.cls is CallClass.EXCLUSIVE:
            return (
                "SCHED-3",
                f"exclusive {call.occ} started before earlier {other.occ} finished",
                other,
            )
        if other.cls is CallClass.EXCLUSIVE:
            return "SCHED-3", f"{call.occ} started before exclusive {other.occ} finished", other
    if call.cls is CallClass.QUEUE:
        for other in calls:
            if other.cls is not CallClass.QUEUE or other.key != call.key or other is call:
                continue
            if other.running:
                return "SCHED-2", f"{call.occ} overlaps {other.occ} on {call.key}", other
            if other.index < call.index and other.admitted and not (other.finished or other.closed):
                return (
                    "SCHED-2",
                    f"{call.occ} overtook {other.occ} in the queue for {call.key}",
                    other,
                )
    if call.cls is CallClass.SAFE or call.cls in _WRITERS:
        for other in calls:
            if other is call or not footprints_conflict(call, other):
                continue
            if other.running:
                return (
                    "SCHED-6",
                    f"{call.occ} overlaps {other.occ}, whose footprint it shares",
                    other,
                )
            if other.index < call.index and other.admitted and not (other.finished or other.closed):
                return (
                    "SCHED-6",
                    f"{call.occ} started before earlier {other.occ}, whose footprint it shares",
                    other,
                )
    return None


def _ancestors(path: str) -> list[str]:
    """`/a/b/c` -> `/`, `/a`, `/a/b`."""
    parts = path.rstrip("/").split("/")
    return ["/"] + ["/".join(parts[:i]) for i in range(2, len(parts))]


def _touches(paths: Sequence[str], exact: set[str], above: set[str]) -> bool:
    """Whether a footprint overlaps one whose paths are `exact` (and whose
    ancestors are `above`): some path is one of them, lies below one, or
    lies above one."""
    for p in paths:
        if p == "/" and (exact or above):
            return True
        if p in exact or p in above or any(a in exact for a in _ancestors(p)):
            return True
    return False


def footprint_partners(calls: Sequence[CallLike]) -> set[int]:
    """The indices of the calls that conflict with some other call of the
    batch by `footprints_conflict`, in time linear in the paths (not in pairs)."""

    def index(footprints: list[tuple[str, ...]]) -> tuple[set[str], set[str]]:
        exact = {p for fp in footprints for p in fp}
        above = {a for p in exact for a in _ancestors(p) if p != "/"}
        return exact, above

    safe = [c for c in calls if c.cls is CallClass.SAFE and c.reads]
    writers = [c for c in calls if c.cls in _WRITERS and c.writes]
    if not safe or not writers:
        return set()
    w_exact, w_above = index([c.writes for c in writers])
    r_exact, r_above = index([c.reads for c in safe])
    out = {c.index for c in safe if _touches(c.reads, w_exact, w_above)}
    out |= {c.index for c in writers if _touches(c.writes, r_exact, r_above)}
    return out
