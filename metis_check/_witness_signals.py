"""TRACE-4: a recorded signal against the witness's record of deliveries.

A `user`, `parent` or `interrupt` stop names a recorded source (SCHED-5): a
`signal` event (the process received SIGINT, SIGTERM, ...) or a
`stop_request` (an API call). Both are the runtime's own word. The witness
saw the process from outside: strace prints every delivery of a traced
signal to every traced process (`--- SIGINT {si_code=SI_USER, si_pid=N}
---`). So each recorded `signal` must match a witnessed delivery of that
signal to that process (the event's `pid`; any traced process for a trace
that records none) that came no later than the event, within
`SIGNAL_SLACK` (strace stamps in real time, converted), and no earlier
than the trace began; each delivery explains one event, and a delivery the
process sent itself (`si_pid` its own pid: `raise`, `os.kill(getpid())`)
explains none, nor does one to a process the witness saw start as a tool
call's (the runtime signals those when it stops them). A recorded signal
with no such delivery breaks TRACE-4 (specs/witness.md). The delivery may
come well before the event: the runtime records the source when its loop
next runs, after an ask the stop waited on.

Where the witness could not observe (no session watched signals then: no
strace, a version-1 or 2 session, a run outside every session; or the signal
is not one it traces), the event is reported as not observed, never passed.
A `stop_request` (an in-process API call: `AgentLoop.cancel`) has no
outside trace at all: it is counted and listed as an unwitnessed claim.
"""

from __future__ import annotations

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Protocol

import attrs

from metis_trace import SignalDelivered
from metis_trace import SignalReceived
from metis_trace import StopRequest
from metis_trace import TraceEvent
from metis_trace import WitnessSession

from ._report import Violation

__all__ = ["SIGNAL_SLACK", "SignalFindings", "check_signals"]

SIGNAL_SLACK = 0.005  # seconds: strace's real-time stamp converted to monotonic (EXEC_SLACK)


class _TraceLike(Protocol):
    source: str
    origin: float | None
    events: Sequence[TraceEvent]


@attrs.frozen
class SignalFindings:
    checked: int = 0
    violations: tuple[Violation, ...] = ()
    unobserved: tuple[str, ...] = ()


@attrs.define
class _Delivery:
    session: int
    record: SignalDelivered
    line: int
    used: bool = False


def _watched(s: WitnessSession) -> frozenset[str] | None:
    """The signals a session traced deliveries of, or None when it traced none."""
    for w in s.header.watched:
        if w.what == "signals":
            return frozenset(w.signals)
    return None


def _covering(sessions: Sequence[WitnessSession], at: float) -> int | None:
    """The session watching at monotonic time `at` (between ready and its end)."""
    for index, s in enumerate(sessions):
        ready = s.ready
        end = s.end
        if ready is not None and end is not None and ready - SIGNAL_SLACK <= at <= end:
            return index
    return None


def check_signals(
    sessions: Sequence[WitnessSession],
    traces: Iterable[_TraceLike],
    tool_processes: Collection[tuple[int, int]] = (),
) -> SignalFindings:
    """Match every recorded `signal` event of every trace with a witnessed
    delivery; `tool_processes`: (session, pid) of the processes the witness
    saw start as a tool call's (their deliveries explain no event)."""
    deliveries = [
        _Delivery(index, r, line)
        for index, s in enumerate(sessions)
        for r, line in zip(s.records, s.lines, strict=True)
        if isinstance(r, SignalDelivered)
    ]
    deliveries.sort(key=lambda d: d.record.t)
    checked = 0
    violations: list[Violation] = []
    unseen: dict[str, list[str]] = {}
    requests: list[str] = []
    recorded = [
        (tr.origin + e.t, tr, e)
        for tr in traces
        if tr.origin is not None  # reported already: its clock cannot be compared
        for e in tr.events
        if isinstance(e, SignalReceived | StopRequest)
    ]
    recorded.sort(key=lambda x: x[0])
    for at, tr, e in recorded:
        where = f"seq {e.seq} in {tr.source}"
        if isinstance(e, StopRequest):
            requests.append(f"{where} (via {e.via})")
            continue
        name = e.name or f"signal {e.signum}"
        index = _covering(sessions, at)
        traced = _watched(sessions[index]) if index is not None else None
        if index is None:
            unseen.setdefault("no witness session watched then", []).append(where)
            continue
        if traced is None:
            why = f"session {sessions[index].header.session} did not observe signals"
            unseen.setdefault(why, []).append(where)
            continue
        if name not in traced:
            unseen.setdefault(f"{name} is not a signal the witness traces", []).append(where)
            continue
        checked += 1
        origin = tr.origin
        assert origin is not None
        match = next(
            (
                d
                for d in deliveries
                if not d.used
                and d.session == index
                and d.record.signal == name
                and (e.pid is None or d.record.pid == e.pid)
                and d.record.sender != d.record.pid
                and (d.session, d.record.pid) not in tool_processes
                and origin - SIGNAL_SLACK <= d.record.t <= at + SIGNAL_SLACK
            ),
            None,
        )
        if match is not None:
            match.used = True
            continue
        to = f"process {e.pid}" if e.pid is not None else "any traced process"
        violations.append(
            Violation(
                invariant="TRACE-4",
                index=e.seq,
                message=(
                    f"{tr.source} records {name} received (seq {e.seq}, t {e.t:.6f}), but the "
                    f"witness saw no delivery of {name} to {to} from another process by then"
                ),
                witness_line=sessions[index].header_line,
            )
        )
    unobserved = [
        f"signals: {why}: {len(where)} recorded signal(s) not checked "
        f"({', '.join(where[:3])}{', ...' if len(where) > 3 else ''})"
        for why, where in unseen.items()
    ]
    if requests:
        unobserved.append(
            f"stop requests: {len(requests)} recorded API stop request(s), an in-process call "
            f"the witness cannot observe: taken on the runtime's word ({', '.join(requests[:3])}"
            f"{', ...' if len(requests) > 3 else ''})"
        )
    return SignalFindings(checked, tuple(violations), tuple(unobserved))
