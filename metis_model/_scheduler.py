"""The four-class scheduler's effects in time (specs/scheduler.md, "Execution
intervals"; specs/loop.md, RETRY; specs/permissions.md, "Batch preflight" and
"The tool surface").

An effect starts only for an admitted call of the header's tool surface,
after every call of its batch is settled, and never after its batch was
cancelled (AUTH-1..3, SCHED-5); what may run beside it is `_interference.py`
(SCHED-1..3, SCHED-6). A started effect commits at most once and is never
re-run once committed (RETRY-1, RETRY-4's recovered commit), ends as the
trace holds it (RETRY-2, SCHED-5's cancelled end), and a result of a
committed call reports that commit (`commit_report_problem`, RETRY-2). A
Background call hands over a job id, and each job completes once (SCHED-4).
"""

from __future__ import annotations

from types import MappingProxyType

import attrs

from metis_trace import NOT_JOURNALED
from metis_trace import CallClass
from metis_trace import Commit
from metis_trace import Decision
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Handshake
from metis_trace import JobDone
from metis_trace import ResultStatus
from metis_trace import content_digest

from ._causes import cancelled_end_problem
from ._interference import interference
from ._loop_state import Divergence
from ._loop_state import LoopState
from ._loop_state import Outcome
from ._loop_state import Phase
from ._loop_state import _diverge
from ._loop_state import _lookup
from ._loop_state import _with_call


def _effect_start(state: LoopState, e: EffectStart) -> Outcome:
    call = _lookup(state, e.occ, e.seq, inv="AUTH-1")
    if isinstance(call, Divergence):
        return call
    if call.committed:
        return _diverge(
            state, "RETRY-1", f"{e.occ} re-executed after its effect committed", *call.events, e.seq
        )
    if not call.admitted:
        return _diverge(
            state,
            "AUTH-1",
            f"{e.occ} started without an allow or approved ask",
            *call.events,
            e.seq,
        )
    if state.tools is not None and call.tool not in state.tools:
        return _diverge(
            state,
            "AUTH-3",
            f"{e.occ} runs {call.tool!r}, which is not in the header's tool surface",
            *call.events,
            e.seq,
        )
    if call.running or call.closed:
        return _diverge(
            state, "LOOP-1", f"{e.occ} started while running or closed", *call.events, e.seq
        )
    if state.cancelled:
        return _diverge(
            state, "SCHED-5", f"{e.occ} started after its batch was cancelled", *call.events, e.seq
        )
    if not state.effects_started:
        for other in state.calls:
            if other.decision is None or (
                other.decision is Decision.ASK and other.approved is None
            ):
                return _diverge(
                    state,
                    "AUTH-2",
                    f"effects started before {other.occ} was settled",
                    *other.events,
                    e.seq,
                )
    broken = interference(state.calls, call)
    if broken is not None:
        return _diverge(state, broken[0], broken[1], *broken[2].events, e.seq)
    state = attrs.evolve(state, effects_started=True)
    return _with_call(
        state, call, e.seq, running=True, started=True, started_t=e.t, limit_s=e.limit_s
    )


def _commit(state: LoopState, e: Commit) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if not call.running or call.committed:
        return _diverge(
            state,
            "LOOP-1",
            f"commit of {e.occ}, which is not running uncommitted",
            *call.events,
            e.seq,
        )
    if e.recovered and state.phase is not Phase.INTERRUPTED:
        return _diverge(
            state,
            "RETRY-4",
            f"recovered commit of {e.occ} outside an interrupt",
            *call.events,
            e.seq,
        )
    return _with_call(
        state,
        call,
        e.seq,
        committed=True,
        recovered=e.recovered,
        digest=e.digest,
        commit_seq=-1 if state.phase is Phase.INTERRUPTED else e.seq,
    )


def journaled(commit_seq: int, end_seq: int) -> bool:
    """RETRY-2: whether a committed call's `effect_end` proves its output was
    journaled. The runtime writes the `commit`, the journal's entry, then the
    `effect_end` in one synchronous step, so an end right after a commit
    written outside an interrupt is the committing process's own (a resuming
    process first writes an `interrupt`)."""
    return commit_seq >= 0 and end_seq == commit_seq + 1


def commit_report_problem(
    occ: str,
    committed: bool,
    outcome: EffectOutcome | None,
    digest: str,
    journaled: bool,
    status: ResultStatus,
    content: str,
) -> str | None:
    """RETRY-2: a result of a call the trace shows committed reports that
    commit: `ok` when the committed effect ended `ok`, `error` otherwise, and
    the committed output (the commit's digest), a resumed process's result
    too. The one exception is a resumed result saying the output was not
    journaled (`NOT_JOURNALED`), allowed only when the trace does not prove
    the journal holds it."""
    if not committed or outcome is None:
        return None
    want = ResultStatus.OK if outcome is EffectOutcome.OK else ResultStatus.ERROR
    if status is not want:
        return f"{occ}'s result is {status.value}, but its committed effect ended {outcome.value}"
    if not digest or content_digest(content) == digest:
        return None
    if content == NOT_JOURNALED:
        if not journaled:
            return None
        return (
            f"{occ} is answered as not journaled, but its effect_end right after the"
            " commit shows the journal holds its output"
        )
    return (
        f"{occ}'s result does not carry its committed output"
        f" (commit digest {digest[:12]}, result {content_digest(content)[:12]})"
    )


def _effect_end(state: LoopState, e: EffectEnd) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    # A Background call that fails or is cancelled before its handshake ends here too.
    if not call.running:
        return _diverge(
            state, "LOOP-1", f"{e.occ} ended without running in the foreground", *call.events, e.seq
        )
    if e.outcome is EffectOutcome.DETACHED:
        return _diverge(
            state,
            "LOOP-1",
            f"{e.occ}'s effect ended detached: only a background job's completion is",
            *call.events,
            e.seq,
        )
    if e.outcome is EffectOutcome.UNKNOWN and state.phase is not Phase.INTERRUPTED:
        return _diverge(
            state,
            "LOOP-1",
            f"{e.occ}'s outcome is unknown outside an interrupt",
            *call.events,
            e.seq,
        )
    if e.committed != call.committed:
        said = "committed" if e.committed else "uncommitted"
        return _diverge(
            state,
            "RETRY-2",
            f"{e.occ} ended {said}, but the trace holds {_commits(call.committed)}",
            *call.events,
            e.seq,
        )
    ended = cancelled_end_problem(e.occ, e.outcome, e.committed, call.covered, state.stop_sourced)
    if ended is not None:
        return _diverge(state, "SCHED-5", ended, *call.events, e.seq)
    return _with_call(
        state,
        call,
        e.seq,
        running=False,
        finished=True,
        outcome=e.outcome,
        journaled=e.committed and journaled(call.commit_seq, e.seq),
    )


def _commits(committed: bool) -> str:
    return "its commit" if committed else "no commit of it"


def _handshake(state: LoopState, e: Handshake) -> Outcome:
    call = _lookup(state, e.occ, e.seq)
    if isinstance(call, Divergence):
        return call
    if call.cls is not CallClass.BACKGROUND or not call.running:
        return _diverge(
            state,
            "SCHED-4",
            f"handshake for {e.occ}, which is not a running background call",
            *call.events,
            e.seq,
        )
    if e.job in state.jobs:
        return _diverge(
            state, "SCHED-4", f"job id {e.job} handed out twice", state.jobs[e.job][1], e.seq
        )
    jobs = MappingProxyType({**state.jobs, e.job: (e.occ, e.seq)})
    state = attrs.evolve(state, jobs=jobs)
    return _with_call(state, call, e.seq, running=False, finished=True, outcome=EffectOutcome.OK)


def detached_problem(e: JobDone) -> str | None:
    """SCHED-4: a job's completion says `detached` exactly when it names the
    process group it left running."""
    if e.outcome is EffectOutcome.DETACHED and (e.pid is None or e.pid <= 0):
        return f"{e.job} of {e.occ} detached without the process group it left running"
    if e.outcome is not EffectOutcome.DETACHED and e.pid is not None:
        return f"{e.job} of {e.occ} names process group {e.pid} but ended {e.outcome.value}"
    return None


def _job_done(state: LoopState, e: JobDone) -> Outcome:
    paired = state.jobs.get(e.job)
    if paired is None or paired[0] != e.occ:
        return _diverge(
            state, "SCHED-4", f"completion of {e.job} for {e.occ} pairs with no handshake", e.seq
        )
    detached = detached_problem(e)
    if detached is not None:
        return _diverge(state, "SCHED-4", detached, paired[1], e.seq)
    jobs = MappingProxyType({k: v for k, v in state.jobs.items() if k != e.job})
    return attrs.evolve(state, jobs=jobs)
