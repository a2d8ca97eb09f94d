"""check_witness, the pure checker: random witness/trace pairs from `simulate`,
and the verdicts on hand-made cases (a trace alone conforms in every one)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import WitnessedTrace
from metis_check import check_trace
from metis_check import check_witness
from metis_check import simulate
from metis_trace import CallClass
from metis_trace import Change
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectStart
from metis_trace import Exec
from metis_trace import JobDone
from metis_trace import Lost
from metis_trace import Ready
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import WitnessHeader
from metis_trace import WitnessSession

ORIGIN, BOOT, WS = 100.0, "boot-1", "/ws"


def _clocked(header: TraceHeader) -> TraceHeader:
    meta = {**header.meta, "workspace": WS, "clock": {"origin": ORIGIN, "boot_id": BOOT}}
    return header.model_copy(update={"meta": meta})


def _keyed(events: Sequence[TraceEvent]) -> list[TraceEvent]:
    """Give every Edit decision a file of its own as its key, as the runtime's
    write and edit have; a Queue edit writes that file (SCHED-2)."""
    out: list[TraceEvent] = []
    for e in events:
        if isinstance(e, DecisionEvent) and e.facts.kind is ToolKind.EDIT:
            path = f"{WS}/f{e.occ}.txt"
            writes = (path,) if e.cls is CallClass.QUEUE else e.writes
            e = e.model_copy(update={"key": f"file:{path}", "writes": writes})
        out.append(e)
    return out


def _session(records: Sequence[Change | Exec | Lost]) -> WitnessSession:
    header = WitnessHeader(pid=1, t=ORIGIN - 1.0, boot_id=BOOT)
    recs = (Ready(t=ORIGIN - 0.5), *records)
    return WitnessSession(header, 1, recs, tuple(range(2, 2 + len(recs))))


def _intervals(events: Sequence[TraceEvent]) -> dict[str, tuple[float, float]]:
    """Every effect's interval: to its end, a Background job's to `job_done`, an
    effect that never ended to the end of time."""
    out = {e.occ: (e.t, float("inf")) for e in events if isinstance(e, EffectStart)}
    ends: dict[str, float] = {}
    for e in events:
        if isinstance(e, EffectEnd | JobDone):
            ends[e.occ] = max(ends.get(e.occ, e.t), e.t)
    return {occ: (a, ends.get(occ, b)) for occ, (a, b) in out.items()}


def _decisions(events: Sequence[TraceEvent]) -> dict[str, DecisionEvent]:
    return {e.occ: e for e in events if isinstance(e, DecisionEvent)}


def _witnessed_effects(events: Sequence[TraceEvent], rng: random.Random) -> list[Change]:
    """Changes where admitted effects may make them: an Edit's own file, anything for Exec."""
    out = []
    decisions = _decisions(events)
    for occ, (a, b) in _intervals(events).items():
        d = decisions[occ]
        if d.facts.kind is ToolKind.READ_ONLY or d.facts.kind is ToolKind.PLAN_CONTROL:
            continue
        path = d.key[5:] if d.key else f"{WS}/anything/{occ}"
        b = min(b, a + 1.0)
        lo = a + (b - a) * rng.random()
        hi = lo + (b - lo) * rng.random()
        out.append(Change(path=path, ops=("modify",), lo=ORIGIN + lo, hi=ORIGIN + hi))
    return out


@settings(max_examples=60)
@given(st.integers(0, 10_000))
def test_a_witness_of_admitted_effects_agrees_with_the_trace(seed: int) -> None:
    header, events = simulate(seed)
    events = _keyed(events)
    assert check_trace(events, header).ok
    changes = _witnessed_effects(events, random.Random(seed))
    report = check_witness([_session(changes)], [WitnessedTrace("t", _clocked(header), events)])
    assert report.ok, report.violations
    assert report.checks.get("AUTH-1", 0) == len(changes) == report.changes


def _gaps(events: Sequence[TraceEvent]) -> list[tuple[float, float]]:
    """Windows inside the run in which no Exec or keyless effect runs."""
    busy = sorted(_intervals(events).values())
    gaps, t = [], events[0].t
    for a, b in busy:
        if a > t:
            gaps.append((t, a))
        t = max(t, b)
    return [(a + 1e-5, b - 1e-5) for a, b in gaps if b - a > 1e-4]  # beyond the checker's EPS


@settings(max_examples=60)
@given(st.integers(0, 10_000), st.data())
def test_a_change_outside_every_admitted_interval_breaks_auth_1(
    seed: int, data: st.DataObject
) -> None:
    header, events = simulate(seed)
    events = _keyed(events)
    gaps = _gaps(events)
    if not gaps:
        return
    a, b = data.draw(st.sampled_from(gaps))
    stray = Change(path=f"{WS}/stray.txt", ops=("create",), lo=ORIGIN + a, hi=ORIGIN + b)
    changes = [*_witnessed_effects(events, random.Random(seed)), stray]
    report = check_witness([_session(changes)], [WitnessedTrace("t", _clocked(header), events)])
    assert [v.invariant for v in report.violations] == ["AUTH-1"]
    assert report.violations[0].witness_line == 2 + len(changes)  # the stray's line


# --- hand-made traces: one batch, one resume ---------------------------------------------


def _trace(lines: list[dict[str, object]]) -> WitnessedTrace:
    from metis_trace import parse_event

    events = [parse_event({"seq": i, "causes": [], **line}) for i, line in enumerate(lines)]
    header = _clocked(TraceHeader(run_id="r", root_run_id="r", tools=("write", "bash")))
    assert check_trace(events, header).ok, check_trace(events, header).first
    return WitnessedTrace("trace.jsonl", header, events)


_FACTS = {"mode": "acceptEdits", "kind": "edit"}


def _batch(t0: float, decision: str, *, resumed: bool = False) -> list[dict[str, object]]:
    call = {"occ": "1.0", "call_id": "c1", "tool": "write", "input": {"path": "a.txt"}}
    head: list[dict[str, object]] = [
        {"t": t0, "kind": "turn_start", "turn": 1},
        {"t": t0, "kind": "request", "turn": 1},
        {"t": t0 + 0.01, "kind": "assistant", "turn": 1, "calls": [call]},
    ]
    facts = dict(_FACTS, mode="default")
    decide = {
        "t": t0 + 0.02,
        "kind": "decision",
        "occ": "1.0",
        "decision": decision,
        "stage": "mode",
        "facts": facts if decision == "ask" else _FACTS,
        "cls": "queue",
        "key": f"file:{WS}/a.txt",
    }
    if decision == "ask":
        rest: list[dict[str, object]] = [
            {"t": t0 + 0.03, "kind": "ask_resolved", "occ": "1.0", "approved": False},
            {"t": t0 + 0.04, "kind": "result", "occ": "1.0", "status": "denied"},
            {
                "t": t0 + 0.05,
                "kind": "results_sent",
                "turn": 1,
                "occs": ["1.0"],
                "call_ids": ["c1"],
            },
            {"t": t0 + 0.06, "kind": "turn_start", "turn": 2},
            {"t": t0 + 0.06, "kind": "request", "turn": 2},
            {"t": t0 + 0.07, "kind": "assistant", "turn": 2},
            {"t": t0 + 0.08, "kind": "run_end", "status": "completed"},
        ]
        return [*head, decide, *rest]
    rest = [
        {"t": t0 + 0.03, "kind": "effect_start", "occ": "1.0"},
        {"t": t0 + 0.04, "kind": "commit", "occ": "1.0", "outcome": "ok"},
        {"t": t0 + 0.04, "kind": "effect_end", "occ": "1.0", "outcome": "ok", "committed": True},
    ]
    if resumed:
        rest += [
            {"t": t0 + 1.0, "kind": "interrupt", "reason": "the process stopped"},
            {"t": t0 + 1.0, "kind": "resume"},
            {"t": t0 + 1.0, "kind": "result", "occ": "1.0", "status": "ok"},
            {"t": t0 + 1.0, "kind": "repair", "call_ids": ["c1"]},
        ]
    else:
        rest.append({"t": t0 + 0.05, "kind": "result", "occ": "1.0", "status": "ok"})
        rest.append(
            {"t": t0 + 1.05, "kind": "results_sent", "turn": 1, "occs": ["1.0"], "call_ids": ["c1"]}
        )
    rest += [
        {"t": t0 + 1.06, "kind": "turn_start", "turn": 2},
        {"t": t0 + 1.06, "kind": "request", "turn": 2},
        {"t": t0 + 1.2, "kind": "assistant", "turn": 2},
        {"t": t0 + 1.3, "kind": "run_end", "status": "completed"},
    ]
    return [*head, decide, *rest]


def _at(path: str, lo: float, hi: float, ops: tuple[str, ...] = ("modify",)) -> Change:
    return Change(path=f"{WS}/{path}", ops=ops, lo=ORIGIN + lo, hi=ORIGIN + hi)


def test_the_effect_of_a_rejected_ask_is_named() -> None:
    trace = _trace(_batch(1.0, "ask"))
    report = check_witness([_session([_at("a.txt", 1.035, 1.045)])], [trace])
    (v,) = report.violations
    assert v.invariant == "AUTH-1" and "denied call 1.0" in v.message and v.witness_line == 3
    assert "(witnessed) at witness line 3" in v.one_line()


def test_an_unlogged_write_beside_an_admitted_one_breaks_auth_1() -> None:
    trace = _trace(_batch(1.0, "allow"))
    ok = [_at("a.txt", 1.031, 1.035), _at(".a.txt.77.0.tmp", 1.031, 1.035, ("create",))]
    assert check_witness([_session(ok)], [trace]).ok  # the file, its temp sibling
    report = check_witness([_session([*ok, _at("a.txt.bak", 1.031, 1.035)])], [trace])
    assert [v.invariant for v in report.violations] == ["AUTH-1"]
    assert "a.txt.bak" in report.violations[0].message


def test_a_committed_effect_seen_again_after_the_resume_breaks_retry_1() -> None:
    trace = _trace(_batch(1.0, "allow", resumed=True))
    first = _at("a.txt", 1.031, 1.035)
    assert check_witness([_session([first])], [trace]).ok
    report = check_witness([_session([first, _at("a.txt", 2.01, 2.02)])], [trace])
    (v,) = report.violations
    assert v.invariant == "RETRY-1" and "committed effect of 1.0" in v.message
    assert report.checks["RETRY-1"] >= 1


def test_an_exec_of_a_bash_command_is_matched_to_its_call() -> None:
    lines = _batch(1.0, "allow")
    lines[2] = {
        **lines[2],
        "calls": [{"occ": "1.0", "call_id": "c1", "tool": "bash", "input": {"command": "make"}}],
    }
    lines[3] = {**lines[3], "facts": {"mode": "bypassPermissions", "kind": "exec"}, "key": None}
    trace = _trace(lines)
    run = Exec(pid=7, path="/bin/bash", argv=("/bin/bash", "-c", "make"), t=101.032, hi=101.033)
    assert check_witness([_session([run])], [trace]).ok
    twice = Exec(pid=8, path="/bin/bash", argv=("/bin/bash", "-c", "make"), t=101.6, hi=101.61)
    (v,) = check_witness([_session([run, twice])], [trace]).violations
    assert v.invariant == "AUTH-1" and "`make` ran" in v.message


def test_setup_before_the_run_and_clocks_that_cannot_be_compared_are_not_judged() -> None:
    trace = _trace(_batch(1.0, "ask"))
    before = Change(path=f"{WS}/seed.txt", ops=("create",), lo=ORIGIN - 0.4, hi=ORIGIN + 0.01)
    assert check_witness([_session([before])], [trace]).ok
    other_boot = trace.header.model_copy(
        update={"meta": {**trace.header.meta, "clock": {"origin": ORIGIN, "boot_id": "b2"}}}
    )
    stray = WitnessedTrace(trace.source, other_boot, trace.events)
    report = check_witness([_session([_at("a.txt", 1.035, 1.045)])], [stray])
    assert report.ok and any("cannot be compared" in u for u in report.unobserved)


def test_what_was_lost_and_what_was_not_witnessed_is_reported() -> None:
    trace = _trace(_batch(1.0, "allow"))
    lost = Lost(what="files", why="inotify queue overflow", lo=ORIGIN + 1.0, hi=ORIGIN + 1.1)
    report = check_witness([_session([lost])], [trace])
    assert any("queue overflow" in u for u in report.unobserved)
    early = WitnessSession(
        WitnessHeader(pid=1, t=ORIGIN - 1.0, boot_id=BOOT),
        1,
        (Ready(t=ORIGIN - 0.5), _at("a.txt", 1.031, 1.035)),
        (2, 3),
    )
    short = check_witness([early], [trace])  # the session's records end at t 1.035
    assert any("while no witness watched" in u for u in short.unobserved)
