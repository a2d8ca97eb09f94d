"""`check_trace`: replay a trace through the model, report the first divergence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from types import MappingProxyType

import attrs

from metis_model._coverage import exercised
from metis_model._derive import recorded_permissions
from metis_model._loop import step
from metis_model._loop_state import Divergence
from metis_model._loop_state import LoopState
from metis_model._loop_state import initial_state
from metis_trace import CAUSES_VERSION
from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._replay import Replay
from ._report import Note
from ._report import Report
from ._report import Violation

# The checks every accepted event of a kind puts to the test, counted from the
# transitions taken; the conditional ones (`_coverage.exercised`) the replay counts
# as it goes. Every kind: TRACE-1 and LOOP-1.
ALWAYS_BY_KIND: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "compaction": ("CLOSE-6", "CLOSE-8"),
        "decision": ("PERM-1",),
        "effect_start": ("AUTH-1",),
        "handshake": ("SCHED-4",),
        "job_done": ("SCHED-4",),
        "result": ("CLOSE-1", "CLOSE-4"),
        "results_sent": ("CLOSE-2", "CLOSE-3", "CLOSE-4"),
        "cancel": ("SCHED-5",),
        "repair": ("CLOSE-5",),
        "spawn": ("CHILD-1", "CHILD-2"),
        "run_end": ("CLOSE-2",),
    }
)


def _state_for(header: TraceHeader | None) -> LoopState:
    if header is None:
        return initial_state()
    return initial_state(
        header.mode,
        header.route,
        header.headless_default,
        frozenset(header.tools),
        header.hooks,
        recorded_permissions(header),
        # Version 2 recorded no sources of its cancels (SCHED-5 as it stated it).
        causes_recorded=header.version >= CAUSES_VERSION,
    )


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
    against running counters, see `_replay_calls._Schedule`). `reference=True` folds
    the specification's `step` itself: slower, and O(b^2) for one batch.

    The report carries the first divergence (with its file line when `line_of`
    maps seq to line), how often each invariant was checked, and how often each
    (phase, event kind) transition was taken.
    """
    if reference:
        return _noted(_check_by_steps(events, header, source, line_of), header)
    return _noted(_check_fast(events, header, source, line_of), header)


_UNRECORDED = (
    "the header records no gate settings (meta.permissions): AUTH-4 was not checked "
    "(a trace written before they were recorded, or a gate that is not the policy gate)"
)


def _noted(report: Report, header: TraceHeader | None) -> Report:
    """A note, not a pass, where AUTH-4 could not be checked: decisions were
    replayed but the header records no settings to derive facts from."""
    decided = any(t.endswith("--decision") for t in report.transitions)
    if header is None or not decided or recorded_permissions(header) is not None:
        return report
    return attrs.evolve(report, notes=(*report.notes, Note(1, _UNRECORDED)))


def _check_fast(
    events: Iterable[TraceEvent],
    header: TraceHeader | None,
    source: str,
    line_of: Sequence[int] | None,
) -> Report:
    start = _state_for(header)
    replay = Replay(
        start.mode,
        start.route,
        start.headless_default,
        start.tools,
        start.hooks,
        start.recorded,
        start.causes_recorded,
    )
    count, divergence, event = replay.run(events)
    transitions = Counter(replay.transitions())
    counted = Counter(replay.ex)
    if divergence is not None:
        violation = _violation(divergence, event, line_of)
        return _report(source, count, transitions, counted, violation)
    if replay.headless_ask is not None:
        state = replay.snapshot()
        end = Divergence("PERM-6", f"headless ask {state.headless_ask} never settled", (), state)
        return _report(source, count, transitions, counted, _violation(end, None, line_of))
    return _report(source, count, transitions, counted, None)


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
    counted: Counter[str] = Counter()
    count = 0
    violation: Violation | None = None
    for event in events:
        count += 1
        outcome = step(state, event)
        if isinstance(outcome, Divergence):
            violation = _violation(outcome, event, line_of)
            break
        transitions[(state.phase.value, event.kind)] += 1
        counted.update(exercised(state, event))
        state = outcome
    else:
        if state.headless_ask is not None:
            end = Divergence(
                "PERM-6", f"headless ask {state.headless_ask} never settled", (), state
            )
            violation = _violation(end, None, line_of)
    # `exercised` counts every check; `_report` adds the per-kind ones itself.
    for (_, kind), n in transitions.items():
        for inv in ("TRACE-1", "LOOP-1", *ALWAYS_BY_KIND.get(kind, ())):
            counted[inv] -= n
    return _report(source, count, transitions, counted, violation)


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
    counted: Counter[str],
    violation: Violation | None,
) -> Report:
    """`checks`: per ID, how often a check had something to check
    (`_coverage.exercised`): the per-kind ones from the transitions taken (every
    accepted event for TRACE-1 and LOOP-1), plus `counted`."""
    checks: Counter[str] = Counter(counted)
    for (_, kind), n in transitions.items():
        for inv in ("TRACE-1", "LOOP-1", *ALWAYS_BY_KIND.get(kind, ())):
            checks[inv] += n
    return Report(
        source=source,
        events=count,
        violations=(violation,) if violation is not None else (),
        checks={k: v for k, v in checks.items() if v},
        transitions={f"{p}--{k}": n for (p, k), n in transitions.items() if n},
    )
