"""`check_trace`: replay a trace through the model, report the first divergence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from ._loop import Divergence, LoopState, initial_state, step
from ._replay import Replay
from ._report import Report, Violation
from .trace import Route, TraceEvent, TraceHeader

# Which invariants each event kind puts to the test (every kind: TRACE-1, LOOP-1).
CHECKED_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "turn_start": (),
        "compaction": ("CLOSE-6",),
        "request": ("CLOSE-2",),
        "stream_repair": (),
        "assistant": (),
        "decision": ("PERM-1", "PERM-2", "PERM-3", "PERM-4", "PERM-5"),
        "ask_resolved": (),
        "effect_start": ("RETRY-1", "AUTH-1", "AUTH-2", "SCHED-1", "SCHED-2", "SCHED-3"),
        "effect_end": (),
        "handshake": ("SCHED-4",),
        "job_done": ("SCHED-4",),
        "result": ("CLOSE-1", "CLOSE-4", "SCHED-5"),
        "results_sent": ("CLOSE-2", "CLOSE-3"),
        "cancel": (),
        "interrupt": (),
        "resume": (),
        "repair": ("CLOSE-5",),
        "spawn": ("CHILD-1", "CHILD-2", "CHILD-3"),
        "run_end": ("LOOP-2", "CLOSE-2", "SCHED-4"),
    }
)
_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)


def _state_for(header: TraceHeader | None) -> LoopState:
    if header is None:
        return initial_state()
    return initial_state(header.mode, header.route, header.headless_default)


def check_trace(
    events: Iterable[TraceEvent],
    header: TraceHeader | None = None,
    *,
    source: str = "<trace>",
    line_of: Sequence[int] | None = None,
    reference: bool = False,
) -> Report:
    """Replay `events` through `step`; linear in their number, however wide
    the batches (a batch of b calls costs O(b): its effect starts are checked
    against running counters, see `_replay._Schedule`). `reference=True` folds
    the specification's `step` itself: slower, and O(b^2) for one batch.

    The report carries the first divergence (with its file line when `line_of`
    maps seq to line), how often each invariant was checked, and how often each
    (phase, event kind) transition was taken.
    """
    if reference:
        return _check_by_steps(events, header, source, line_of)
    start = _state_for(header)
    replay = Replay(start.mode, start.route, start.headless_default)
    count, divergence, event = replay.run(events)
    transitions = Counter(replay.transitions())
    if divergence is not None:
        violation = _violation(divergence, event, line_of)
        return _report(source, count, transitions, replay.headless, violation)
    if replay.headless_ask is not None:
        state = replay.snapshot()
        end = Divergence("PERM-6", f"headless ask {state.headless_ask} never settled", (), state)
        return _report(source, count, transitions, replay.headless, _violation(end, None, line_of))
    return _report(source, count, transitions, replay.headless, None)


def _check_by_steps(
    events: Iterable[TraceEvent],
    header: TraceHeader | None,
    source: str,
    line_of: Sequence[int] | None,
) -> Report:
    """The same check by folding the specification's `step`: slow, and the
    reference that the fast replay is tested against."""
    state = _state_for(header)
    transitions: Counter[tuple[str, str]] = Counter()
    count = headless = 0
    for event in events:
        count += 1
        outcome = step(state, event)
        if isinstance(outcome, Divergence):
            return _report(
                source, count, transitions, headless, _violation(outcome, event, line_of)
            )
        transitions[(state.phase.value, event.kind)] += 1
        if event.kind == "decision" and event.route in _WAITLESS:
            headless += 1
        state = outcome
    if state.headless_ask is not None:
        end = Divergence("PERM-6", f"headless ask {state.headless_ask} never settled", (), state)
        return _report(source, count, transitions, headless, _violation(end, None, line_of))
    return _report(source, count, transitions, headless, None)


def _violation(d: Divergence, event: TraceEvent | None, line_of: Sequence[int] | None) -> Violation:
    index = event.seq if event is not None else d.state.last_seq
    line = None
    if line_of is not None and 0 <= index < len(line_of):
        line = line_of[index]
    return Violation(
        invariant=d.invariant,
        index=index,
        message=d.message,
        line=line,
        state=d.state.describe(),
        slice=d.slice,
    )


def _report(
    source: str,
    count: int,
    transitions: Counter[tuple[str, str]],
    headless: int,
    violation: Violation | None,
) -> Report:
    """Counts come from the transitions taken; PERM-6 from headless decisions."""
    checks: Counter[str] = Counter({"TRACE-1": count, "LOOP-1": count})
    kinds: Counter[str] = Counter()
    for (_, kind), n in transitions.items():
        kinds[kind] += n
    for kind, n in kinds.items():
        for inv in CHECKED_BY_KIND[kind]:
            checks[inv] += n
    checks["PERM-6"] += headless
    return Report(
        source=source,
        events=count,
        violations=(violation,) if violation is not None else (),
        checks={k: v for k, v in checks.items() if v},
        transitions={f"{p}--{k}": n for (p, k), n in transitions.items() if n},
    )
