"""Terminal-result closure, and cancels (specs/closure.md; specs/scheduler.md,
"Causes").

Each call occurrence of a batch gets exactly one result (CLOSE-1), only a
call of the batch does (CLOSE-4), of a status its history allows (LOOP-1,
SCHED-5, RETRY-2); the results message follows only once every call is
answered (CLOSE-2), in call order with the calls' ids (CLOSE-3, CLOSE-4). A
cancel covers what its cause allows, and names the source its cause requires
(SCHED-5, with `_causes.py`); `_source` records a `signal`, `stop_request` or
`sink_error` for a cancel or an interrupt to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from types import MappingProxyType

import attrs

from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import Decision
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import TraceEvent

from ._causes import cancel_source_problem
from ._causes import cancelled_result_problem
from ._causes import limit_problem
from ._loop_state import TIMEOUT_SLACK_S
from ._loop_state import CallLike
from ._loop_state import Divergence
from ._loop_state import LoopState
from ._loop_state import Outcome
from ._loop_state import Phase
from ._loop_state import _diverge
from ._loop_state import _lookup
from ._loop_state import _with_call
from ._scheduler import commit_report_problem

_NEEDS_CANCEL = (ResultStatus.CANCELLED, ResultStatus.SKIPPED)


def _result(state: LoopState, e: Result) -> Outcome:
    call = _lookup(state, e.occ, e.seq, inv="CLOSE-4")
    if isinstance(call, Divergence):
        return call
    if call.closed:
        return _diverge(state, "CLOSE-1", f"second result for {e.occ}", *call.events, e.seq)
    if state.phase is Phase.RESUMED and not call.committed:
        return _diverge(
            state,
            "RETRY-2",
            f"after resume only effects the trace shows committed are answered, not {e.occ}",
            *call.events,
            e.seq,
        )
    if e.status in _NEEDS_CANCEL and not (
        state.cancelled or (call.covered and e.status is ResultStatus.CANCELLED)
    ):
        return _diverge(
            state,
            "SCHED-5",
            f"{e.occ} was {e.status.value} with no cancel covering it or interrupt",
            *call.events,
            e.seq,
        )
    if call.running:
        return _diverge(
            state, "LOOP-1", f"result for {e.occ} while its effect runs", *call.events, e.seq
        )
    if e.status is ResultStatus.OK and not call.finished:
        return _diverge(
            state, "LOOP-1", f"ok result for {e.occ} with no finished effect", *call.events, e.seq
        )
    refused = call.decision is Decision.DENY or (
        call.decision is Decision.ASK and call.approved is False
    )
    if e.status is ResultStatus.DENIED and not refused:
        return _diverge(
            state,
            "LOOP-1",
            f"denied result for {e.occ}, which was not refused",
            *call.events,
            e.seq,
        )
    closed_as = cancelled_result_problem(e.occ, call.outcome, call.committed, e.status)
    if closed_as is not None:
        return _diverge(state, "SCHED-5", closed_as, *call.events, e.seq)
    reported = commit_report_problem(
        e.occ, call.committed, call.outcome, call.digest, call.journaled, e.status, e.content
    )
    if reported is not None:
        return _diverge(state, "RETRY-2", reported, *call.events, e.seq)
    return _with_call(state, call, e.seq, status=e.status)


def ids_problem(calls: Sequence[CallLike], sent: Sequence[str]) -> tuple[str, str] | None:
    """CLOSE-4 / CLOSE-3 for the ids a results message held: each is an id of
    a call of the batch, and they are the calls' ids, one per occurrence, in
    call order."""
    expected = [c.call_id for c in calls]
    stray = sorted(set(sent) - set(expected))
    if stray:
        return "CLOSE-4", f"the results message holds {stray}, which no call of the batch has"
    if list(sent) != expected:
        return "CLOSE-3", f"the results message held {list(sent)}, the calls were {expected}"
    return None


def _results_sent(state: LoopState, e: ResultsSent) -> Outcome:
    expected = tuple(c.occ for c in state.calls)
    missing = [c for c in state.calls if not c.closed]
    if missing:
        return _diverge(
            state,
            "CLOSE-2",
            f"results sent without a result for {missing[0].occ}",
            *missing[0].events,
            e.seq,
        )
    if tuple(e.occs) != expected:
        return _diverge(
            state,
            "CLOSE-3",
            f"results sent as {list(e.occs)}, calls were {list(expected)}",
            state.assistant_seq,
            e.seq,
        )
    wrong = ids_problem(state.calls, e.call_ids)
    if wrong is not None:
        return _diverge(state, wrong[0], wrong[1], state.assistant_seq, e.seq)
    return attrs.evolve(state, phase=Phase.READY, calls=(), index_of=MappingProxyType({}))


def cancel_problem(
    state_calls: Sequence[CallLike],
    index_of: Mapping[str, int],
    e: Cancel,
    causes_recorded: bool = True,
) -> str | None:
    """SCHED-5 for a cancel: only a timeout names the calls it covers, and
    those are running past its limit, the one each recorded (when the trace
    records limits); any other cause covers the whole batch."""
    timeout = e.cause is CancelCause.TIMEOUT
    if not timeout:
        return f"a {e.cause.value} cancel names calls {list(e.occs)}" if e.occs else None
    if not e.occs or e.limit_s is None:
        return "a timeout's cancel must name the calls it covers and its limit"
    for occ in e.occs:
        index = index_of.get(occ)
        call = state_calls[index] if index is not None else None
        if call is None or not call.running:
            return f"the timeout covers {occ}, which is not running"
        if causes_recorded:
            wrong = limit_problem(occ, call.limit_s, e.limit_s)
            if wrong is not None:
                return wrong
        if e.t - call.started_t < e.limit_s - TIMEOUT_SLACK_S:
            ran = e.t - call.started_t
            return f"the timeout cancels {occ} after {ran:.6f} s, before its {e.limit_s:g} s limit"
    return None


def _without(sources: Mapping[int, str], seq: int | None) -> Mapping[int, str]:
    if seq is None:
        return sources
    return MappingProxyType({k: v for k, v in sources.items() if k != seq})


def _cancel(state: LoopState, e: Cancel) -> Outcome:
    problem = cancel_problem(state.calls, state.index_of, e, state.causes_recorded)
    used: int | None = None
    if problem is None and state.causes_recorded:
        problem, used = cancel_source_problem(e.cause, e.causes, state.sources)
    if problem is not None:
        return _diverge(state, "SCHED-5", problem, state.assistant_seq, e.seq)
    state = attrs.evolve(state, sources=_without(state.sources, used))
    if not e.occs:
        return attrs.evolve(state, cancelled=True, stop_sourced=True)
    for occ in e.occs:
        call = state.calls[state.index_of[occ]]
        state = _with_call(state, call, e.seq, covered=True)
    return state


def _source(state: LoopState, e: TraceEvent) -> Outcome:
    """A `signal`, `stop_request` or `sink_error`: a source a cancel may name."""
    return attrs.evolve(state, sources=MappingProxyType({**state.sources, e.seq: e.kind}))
