"""Witnessed runs made up for TRACE-3, and the edits that break them.

`exit_case(rng)` builds a run of bash calls (foreground and Background, some
failing) as a conforming trace with its clock, and the witness session that
saw each `bash -c CMD` start and exit with the status the trace records.
`break_exit` makes the two disagree, one way or the other: the trace records
`ok` for a failed process (or `error` for one that exited 0), or the
witnessed exit differs; the trace alone still conforms, the witness does not
(specs/witness.md, TRACE-3). Used by the property tests and `metis check`.
"""

from __future__ import annotations

import random
from typing import Any

from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Exec
from metis_trace import Facts
from metis_trace import Handshake
from metis_trace import JobDone
from metis_trace import Mode
from metis_trace import ProcessExit
from metis_trace import Ready
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart
from metis_trace import Watched
from metis_trace import WitnessHeader
from metis_trace import WitnessSession

from ._generate import verdict_fields

__all__ = ["break_exit", "exit_case"]

_ORIGIN = 1000.0  # the trace's t 0 on the witness's clock
_BOOT = "boot-exit-case"


def exit_case(
    rng: random.Random, calls: int | None = None
) -> tuple[TraceHeader, list[TraceEvent], list[WitnessSession]]:
    """A conforming trace of bash calls and the witness session that saw them."""
    n = calls if calls is not None else rng.randint(1, 5)
    background = [rng.random() < 0.4 for _ in range(n)]
    fails = [rng.random() < 0.4 for _ in range(n)]
    events: list[TraceEvent] = []
    records: list[Any] = [Ready(t=_ORIGIN - 0.5)]
    t = 0.01

    def add(factory: Any, **fields: Any) -> int:
        seq = len(events)
        events.append(factory(seq=seq, t=round(t, 6), causes=(seq - 1,) if seq else (), **fields))
        return seq

    add(TurnStart, turn=1)
    add(Request, turn=1)
    refs = [
        CallRef(occ=f"1.{i}", call_id=f"c{i}", tool="bash", input={"command": f"step {i}"})
        for i in range(n)
    ]
    add(Assistant, turn=1, calls=tuple(refs), stop_reason="tool_use")
    verdict = verdict_fields(Facts(mode=Mode.BYPASS, kind=ToolKind.EXEC))
    for i, ref in enumerate(refs):
        cls = CallClass.BACKGROUND if background[i] else CallClass.EXCLUSIVE
        add(
            DecisionEvent,
            occ=ref.occ,
            **verdict,
            cls=cls,
            reads=("/",) if cls is CallClass.EXCLUSIVE else (),
            writes=("/",) if cls is CallClass.EXCLUSIVE else (),
        )
    jobs: list[tuple[str, str, bool]] = []
    for i, ref in enumerate(refs):
        t += 0.01
        add(EffectStart, occ=ref.occ)
        pid = 4000 + i
        at = _ORIGIN + t + 0.001
        records.append(
            Exec(pid=pid, path="/bin/bash", argv=("bash", "-c", f"step {i}"), t=at, hi=at + 1e-3)
        )
        t += 0.005
        outcome = EffectOutcome.ERROR if fails[i] else EffectOutcome.OK
        status = ResultStatus.ERROR if fails[i] else ResultStatus.OK
        if background[i]:
            add(Handshake, occ=ref.occ, job=f"job-{i}")
            add(Result, occ=ref.occ, call_id=ref.call_id, status=ResultStatus.OK)
            jobs.append((ref.occ, f"job-{i}", fails[i]))
        else:
            end = _ORIGIN + t - 0.001
            records.append(_exit(pid, fails[i], end))
            add(EffectEnd, occ=ref.occ, outcome=outcome)
            add(Result, occ=ref.occ, call_id=ref.call_id, status=status)
    add(
        ResultsSent,
        turn=1,
        occs=tuple(r.occ for r in refs),
        call_ids=tuple(r.call_id for r in refs),
    )
    for k, (occ, job, failed) in enumerate(jobs):
        t += 0.01
        records.append(_exit(4000 + int(occ.split(".")[1]), failed, _ORIGIN + t - 0.001 - k * 1e-6))
        done = EffectOutcome.ERROR if failed else EffectOutcome.OK
        seq = len(events)
        handshake = next(e.seq for e in events if isinstance(e, Handshake) and e.job == job)
        events.append(
            JobDone(seq=seq, t=round(t, 6), causes=(handshake,), occ=occ, job=job, outcome=done)
        )
    t += 0.01
    add(TurnStart, turn=2)
    add(Request, turn=2)
    add(Assistant, turn=2, calls=(), stop_reason="end_turn")
    add(RunEnd, status=RunStatus.COMPLETED)
    header = TraceHeader(
        run_id="exit-case",
        root_run_id="exit-case",
        mode=Mode.BYPASS,
        tools=("bash",),
        producer="metis_check._witness_cases",
        meta={"clock": {"source": "CLOCK_MONOTONIC", "origin": _ORIGIN, "boot_id": _BOOT}},
    )
    witness = WitnessHeader(
        pid=1,
        boot_id=_BOOT,
        t=_ORIGIN - 1.0,
        producer="metis_check._witness_cases",
        watched=(Watched(what="exec", how="made up"), Watched(what="exits", how="made up")),
    )
    records.sort(key=lambda r: r.hi if hasattr(r, "hi") else r.t)
    session = WitnessSession(witness, 1, tuple(records), tuple(range(2, 2 + len(records))))
    return header, events, [session]


def _exit(pid: int, failed: bool, t: float) -> ProcessExit:
    return ProcessExit(pid=pid, status=1 if failed else 0, t=t, hi=t + 1e-4)


def break_exit(
    events: list[TraceEvent], sessions: list[WitnessSession], rng: random.Random
) -> tuple[list[TraceEvent], list[WitnessSession]]:
    """The trace and its witness made to disagree on one call's exit (TRACE-3)."""
    if rng.random() < 0.5:  # the witnessed exit differs from what the trace says
        s = sessions[0]
        exits = [i for i, r in enumerate(s.records) if isinstance(r, ProcessExit)]
        i = rng.choice(exits)
        x = s.records[i]
        assert isinstance(x, ProcessExit)
        flipped = x.model_copy(update={"status": 0 if x.status else 2})
        if x.status == 0 and rng.random() < 0.5:
            flipped = x.model_copy(update={"status": None, "signal": "SIGKILL"})
        records = (*s.records[:i], flipped, *s.records[i + 1 :])
        return events, [WitnessSession(s.header, s.header_line, records, s.lines)]
    # the trace records the other outcome: a job's `job_done`, or a result and its effect's end
    out = list(events)
    picks: list[JobDone | EffectEnd] = [e for e in out if isinstance(e, JobDone | EffectEnd)]
    pick = rng.choice(picks)
    flip = {EffectOutcome.OK: EffectOutcome.ERROR, EffectOutcome.ERROR: EffectOutcome.OK}
    out[pick.seq] = pick.model_copy(update={"outcome": flip[pick.outcome]})
    if isinstance(pick, EffectEnd):
        result = next(e for e in out if isinstance(e, Result) and e.occ == pick.occ)
        status = ResultStatus.OK if result.status is ResultStatus.ERROR else ResultStatus.ERROR
        out[result.seq] = result.model_copy(update={"status": status})
    return out, sessions
