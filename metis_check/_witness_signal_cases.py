"""Witnessed runs made up for TRACE-4, and the edits that break them.

`signal_case(rng)` takes a simulated run (`_generate.simulate`) whose stop
names a recorded `signal`, places it on a clock (`meta.clock`), gives each
`signal` event the runtime's pid (or none, as an older trace), and builds
the witness session that saw each signal delivered to that process by
another one, shortly before the event. `break_signal` makes the two
disagree: the delivery is gone, came after the event, was another signal,
was sent by the process to itself, or the trace names another process or
another signal (a runtime inventing its stop's source). The trace alone
still conforms, the witness does not (specs/witness.md, TRACE-4). Used by
the property tests and `metis check`.
"""

from __future__ import annotations

import random
from typing import Any

from metis_trace import End
from metis_trace import Ready
from metis_trace import RunStarted
from metis_trace import SignalDelivered
from metis_trace import SignalReceived
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import Watched
from metis_trace import WitnessHeader
from metis_trace import WitnessSession

from ._generate import simulate
from ._sim_config import SimConfig

__all__ = ["break_signal", "signal_case"]

_ORIGIN = 2000.0  # the trace's t 0 on the witness's clock
_BOOT = "boot-signal-case"
_RUN_PID, _SENDER = 5100, 5000
_TRACED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
_NUMBERS = {"SIGINT": 2, "SIGTERM": 15, "SIGHUP": 1, "SIGQUIT": 3}
_CONFIG = SimConfig(p_interrupt=0.6, p_cancel=0.3)


def _run_with_signals(rng: random.Random) -> tuple[TraceHeader, list[TraceEvent]]:
    for _ in range(500):
        header, events = simulate(rng.randrange(1_000_000), _CONFIG)
        if any(isinstance(e, SignalReceived) for e in events):
            return header, events
    raise AssertionError("no simulated run with a recorded signal")  # pragma: no cover


def signal_case(
    rng: random.Random,
) -> tuple[TraceHeader, list[TraceEvent], list[WitnessSession]]:
    """A conforming simulated run with signals, and the witness that saw them."""
    header, events = _run_with_signals(rng)
    clock = {"source": "CLOCK_MONOTONIC", "origin": _ORIGIN, "boot_id": _BOOT}
    header = header.model_copy(update={"meta": {**header.meta, "clock": clock}})
    out: list[TraceEvent] = []
    records: list[Any] = [
        Ready(t=_ORIGIN - 0.5),
        RunStarted(t=_ORIGIN - 0.4, pid=_RUN_PID, argv=("metis", "run")),
    ]
    for e in events:
        if isinstance(e, SignalReceived):
            e = e.model_copy(update={"pid": _RUN_PID if rng.random() < 0.8 else None})
            at = _ORIGIN + e.t - rng.uniform(0.0, 0.003)
            records.append(
                SignalDelivered(
                    pid=_RUN_PID, signal=e.name, code="SI_USER", sender=_SENDER, t=at, hi=at + 1e-3
                )
            )
        out.append(e)
    end = _ORIGIN + (events[-1].t if events else 0.0) + 1.0
    records.sort(key=lambda r: r.t)
    records.append(End(t=end, reason="the run exited"))
    witness = WitnessHeader(
        pid=1,
        boot_id=_BOOT,
        t=_ORIGIN - 1.0,
        producer="metis_check._witness_signal_cases",
        watched=(Watched(what="signals", how="made up", signals=_TRACED),),
    )
    session = WitnessSession(witness, 1, tuple(records), tuple(range(2, 2 + len(records))))
    return header, out, [session]


def break_signal(
    events: list[TraceEvent], sessions: list[WitnessSession], rng: random.Random
) -> tuple[list[TraceEvent], list[WitnessSession]]:
    """The trace and its witness made to disagree on one recorded signal (TRACE-4)."""
    s = sessions[0]
    picks = [e for e in events if isinstance(e, SignalReceived)]
    pick = rng.choice(picks)
    used = {e.name for e in picks}
    unused = [n for n in _TRACED if n not in used]
    # The delivery made for `pick`: the n-th delivery, as `pick` is the n-th signal.
    n = picks.index(pick)
    where = [i for i, r in enumerate(s.records) if isinstance(r, SignalDelivered)][n]
    d = s.records[where]
    assert isinstance(d, SignalDelivered)
    how = rng.choice(("gone", "late", "other", "self", "pid", "invented"))
    out = list(events)
    records: list[Any] = list(s.records)
    if how == "gone":
        del records[where]
    elif how == "late":  # after every event: no recorded signal may use it
        late = _ORIGIN + events[-1].t + 0.5
        records[where] = d.model_copy(update={"t": late, "hi": late + 1e-3})
    elif how == "other":
        records[where] = d.model_copy(update={"signal": rng.choice(unused)})
    elif how == "self":
        records[where] = d.model_copy(update={"sender": d.pid})
    elif how == "pid":
        out[pick.seq] = pick.model_copy(update={"pid": _RUN_PID + 1})
    else:  # the runtime names a signal nobody sent
        name = rng.choice(unused)
        out[pick.seq] = pick.model_copy(update={"name": name, "signum": _NUMBERS[name]})
    lines = tuple(range(2, 2 + len(records)))
    return out, [WitnessSession(s.header, s.header_line, tuple(records), lines)]
