"""The agent loop as a pure state machine over trace events.

`step(state, event)` returns the next state, or a `Divergence` naming the first
invariant the event breaks. States are frozen; nothing here keeps history
beyond what the invariants need, so replay is linear in the trace length for
bounded batches.

The phases (specs/loop.md):

    READY --turn_start--> PREPARING --request--> STREAMING --assistant--> BATCH
      ^                                                  \\--(no calls)--> ANSWERED
      +------------------results_sent--------------------------- BATCH
    any --interrupt--> INTERRUPTED --resume--> RESUMED --repair--> READY
    ANSWERED --turn_start--> PREPARING (a follow-up message)
    READY | ANSWERED | INTERRUPTED --run_end--> ENDED

This module holds `step` (TRACE-1, PERM-6's waiting ask, RETRY-1, LOOP-1's
enabled events), the turn's own events (a turn, context control, the
request, the assistant message: LOOP-1, CLOSE-2, CLOSE-6, CLOSE-8), a spawn
(CHILD-1..3, `_children.py`) and the end of the run (LOOP-2, SCHED-4,
CLOSE-2), and `_HANDLERS`, which names where each event kind is checked, in
the order specs/ presents the mechanisms:

- `_loop_state.py`: the phases, `ENABLED`, `Call`, `LoopState` (loop.md);
- `_scheduler.py`: effects start, commit and end, background jobs
  (scheduler.md); which calls may run together: `_interference.py`;
- `_closure.py`: results, the results message, cancels (closure.md, SCHED-5);
- `_resume.py`: interruption, resume and repair (loop.md, closure.md);
- `_decisions.py`: hooks and permission decisions (permissions.md, CHILD-6).

What an event puts to the test is `_coverage.py`; what may happen next in a
state, `_enabled.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import Compaction
from metis_trace import Request
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import Spawn
from metis_trace import StreamRepair
from metis_trace import TraceEvent
from metis_trace import TurnStart

from ._causes import SOURCE_KINDS
from ._children import spawn_violation
from ._closure import _cancel
from ._closure import _result
from ._closure import _results_sent
from ._closure import _source
from ._context import transcript_problem
from ._decisions import _ask_resolved
from ._decisions import _decision
from ._decisions import _hook
from ._loop_state import ENABLED
from ._loop_state import Call
from ._loop_state import LoopState
from ._loop_state import Outcome
from ._loop_state import Phase
from ._loop_state import _diverge
from ._resume import _interrupt
from ._resume import _repair
from ._resume import _resume
from ._scheduler import _commit
from ._scheduler import _effect_end
from ._scheduler import _effect_start
from ._scheduler import _handshake
from ._scheduler import _job_done


def step(state: LoopState, event: TraceEvent) -> Outcome:
    """Apply one event; the next state or the first divergence it causes."""
    seq = event.seq
    if seq != state.last_seq + 1:
        return _diverge(state, "TRACE-1", f"seq {seq} follows {state.last_seq}", seq)
    if event.t < state.last_t:
        return _diverge(state, "TRACE-1", f"timestamp {event.t} goes back from {state.last_t}", seq)
    if any(c >= seq or c < 0 for c in event.causes):
        return _diverge(
            state, "TRACE-1", f"causal edge {list(event.causes)} does not point back", seq
        )
    if state.headless_ask is not None and not (
        isinstance(event, AskResolved) and event.occ == state.headless_ask
    ):
        call = state.calls[state.index_of[state.headless_ask]]
        return _diverge(
            state,
            "PERM-6",
            f"headless ask {state.headless_ask} was left waiting",
            *call.events,
            seq,
        )
    rerun = rerun_after_stop(state, event)
    if rerun is not None:
        return _diverge(
            state, "RETRY-1", f"{rerun.occ} re-executed after its effect committed", *rerun.events
        )
    if event.kind not in ENABLED[state.phase]:
        return _diverge(
            state, "LOOP-1", f"{event.kind} is not enabled in phase {state.phase.value}", seq
        )
    state = attrs.evolve(state, last_seq=seq, last_t=event.t)
    handler = _HANDLERS[event.kind]
    return handler(state, event)


def rerun_after_stop(state: LoopState, event: TraceEvent) -> Call | None:
    """A committed call started again after an interrupt (before or after the
    resume): RETRY-1, before the phase rejects the start (LOOP-1)."""
    if event.kind != "effect_start" or state.phase not in (Phase.INTERRUPTED, Phase.RESUMED):
        return None
    index = state.index_of.get(event.occ)
    if index is None or not state.calls[index].committed:
        return None
    call = state.calls[index]
    return attrs.evolve(call, events=(*call.events, event.seq))


# --- the loop ------------------------------------------------------------


def _turn_start(state: LoopState, e: TurnStart) -> Outcome:
    if e.turn != state.turn + 1:
        return _diverge(state, "LOOP-1", f"turn {e.turn} follows turn {state.turn}", e.seq)
    return attrs.evolve(state, phase=Phase.PREPARING, turn=e.turn)


def _compaction(state: LoopState, e: Compaction) -> Outcome:
    calls, results = set(e.calls_removed), set(e.results_removed)
    if calls != results:
        split = sorted(calls ^ results)
        return _diverge(
            state, "CLOSE-6", f"compaction separates calls from results: {split}", e.seq
        )
    open_occs = state.open_occs()
    if open_occs:
        shown = sorted(set(open_occs) & calls or open_occs)
        return _diverge(state, "CLOSE-6", f"compaction while {shown} open", e.seq)
    if state.phase is Phase.STREAMING and e.step != "retry":
        return _diverge(
            state, "LOOP-1", f"only an overflow retry compacts while streaming, not {e.step}", e.seq
        )
    problem = transcript_problem(e.messages)
    if problem is not None:
        return _diverge(
            state,
            "CLOSE-8",
            f"{e.step} left a transcript that is not provider-valid: {problem}",
            e.seq,
        )
    if state.phase is Phase.STREAMING:
        return attrs.evolve(state, phase=Phase.PREPARING)
    return state


def _request(state: LoopState, e: Request) -> Outcome:
    open_occs = state.open_occs()
    if open_occs:
        first = state.calls[state.index_of[open_occs[0]]]
        return _diverge(
            state,
            "CLOSE-2",
            f"provider request with {list(open_occs)} unanswered",
            *first.events,
            e.seq,
        )
    return attrs.evolve(state, phase=Phase.STREAMING, calls=(), index_of=MappingProxyType({}))


def _stream_repair(state: LoopState, e: StreamRepair) -> Outcome:
    return state


def _assistant(state: LoopState, e: Assistant) -> Outcome:
    occs = [c.occ for c in e.calls]
    if len(set(occs)) != len(occs):
        return _diverge(state, "LOOP-1", f"repeated occurrence ids in one message: {occs}", e.seq)
    if not occs:
        return attrs.evolve(state, phase=Phase.ANSWERED, assistant_seq=e.seq)
    calls = tuple(
        Call(occ=c.occ, index=i, tool=c.tool, call_id=c.call_id, events=(e.seq,), input=c.input)
        for i, c in enumerate(e.calls)
    )
    return attrs.evolve(
        state,
        phase=Phase.BATCH,
        calls=calls,
        index_of=MappingProxyType({o: i for i, o in enumerate(occs)}),
        assistant_seq=e.seq,
        effects_started=False,
        cancelled=False,
        stop_sourced=False,
    )


# --- children and the end ------------------------------------------------


def _spawn(state: LoopState, e: Spawn) -> Outcome:
    broken = spawn_violation(
        e.parent_mode, e.parent_tools, e.child_mode, e.child_tools, e.requested_mode
    )
    if broken is not None:
        return _diverge(state, broken[0], f"spawn of {e.agent_id}: {broken[1]}", e.seq)
    return state


def _run_end(state: LoopState, e: RunEnd) -> Outcome:
    if e.status is RunStatus.COMPLETED:
        if state.phase is not Phase.ANSWERED:
            return _diverge(
                state,
                "LOOP-2",
                f"completed in phase {state.phase.value}, not after an answer",
                e.seq,
            )
        if state.jobs:
            job, (occ, seq) = next(iter(state.jobs.items()))
            return _diverge(
                state,
                "SCHED-4",
                f"run completed with job {job} of {occ} never completed",
                seq,
                e.seq,
            )
    if e.status is not RunStatus.INTERRUPTED and state.open_occs():
        return _diverge(
            state,
            "CLOSE-2",
            f"run ended with {list(state.open_occs())} unanswered",
            state.assistant_seq,
            e.seq,
        )
    return attrs.evolve(state, phase=Phase.ENDED)


_HANDLERS: Mapping[str, Callable[[LoopState, Any], Outcome]] = MappingProxyType(
    {
        "turn_start": _turn_start,
        "compaction": _compaction,
        "request": _request,
        "stream_repair": _stream_repair,
        "assistant": _assistant,
        "hook": _hook,
        "decision": _decision,
        "ask_resolved": _ask_resolved,
        "effect_start": _effect_start,
        "commit": _commit,
        "effect_end": _effect_end,
        "handshake": _handshake,
        "job_done": _job_done,
        "result": _result,
        "results_sent": _results_sent,
        "cancel": _cancel,
        "interrupt": _interrupt,
        **dict.fromkeys(SOURCE_KINDS, _source),
        "resume": _resume,
        "repair": _repair,
        "spawn": _spawn,
        "run_end": _run_end,
    }
)
