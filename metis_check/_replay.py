"""Fast replay: `step` folded over a trace, with the state updated in place.

`step` in `_loop.py` is the specification; it builds a new frozen state per
event, which is clear and slow. `Replay` applies the same transitions to one
mutable state so that `check_trace` is linear with a small constant. The rule
checks themselves are shared (`decision_problem`, `interference`,
`spawn_violation`, `ENABLED`); what is repeated here is bookkeeping only, and
tests/model/test_replay.py holds the two equal — same verdict, same invariant,
same event — on every generated and broken trace.

What keeps the work per event small and constant:
- dispatch: each phase has a table from the event kinds it enables to their
  handlers, so one lookup both checks LOOP-1 and finds the handler;
- decisions: `decision_problem` is remembered per (facts, decision, stage),
  which a run repeats; resolving the facts again costs several lookups' worth;
- wide batches: `_Schedule` keeps counters and cursors that say when the
  shared `interference` scan would find a conflict, so the scan (O(b) for a
  batch of b calls) runs only then, not at every effect start: a batch costs
  O(b), not O(b^2).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from typing import NoReturn

from metis_model._causes import STOP_SOURCES
from metis_model._causes import cancel_source_problem
from metis_model._causes import cancelled_end_problem
from metis_model._causes import cancelled_result_problem
from metis_model._causes import named_source
from metis_model._children import spawn_violation
from metis_model._closure import cancel_problem
from metis_model._closure import ids_problem
from metis_model._context import transcript_problem
from metis_model._decisions import _batch_writes
from metis_model._decisions import decision_problem
from metis_model._decisions import enforcement_problem
from metis_model._decisions import hook_problem
from metis_model._decisions import hooks_for
from metis_model._derive import facts_problem
from metis_model._interference import footprint_partners
from metis_model._interference import interference
from metis_model._interference import queue_edit
from metis_model._interference import queue_key_problem
from metis_model._loop_state import _FOREGROUND
from metis_model._loop_state import ENABLED
from metis_model._loop_state import Divergence
from metis_model._loop_state import Phase
from metis_model._resume import committed_stub
from metis_model._resume import recovered_problem
from metis_model._resume import stub_problem
from metis_model._scheduler import _commits
from metis_model._scheduler import commit_report_problem
from metis_model._scheduler import detached_problem
from metis_model._scheduler import journaled
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RunStatus
from metis_trace import TraceEvent

from ._replay_calls import _ALLOW
from ._replay_calls import _ASK
from ._replay_calls import _BACKGROUND
from ._replay_calls import _CANCELLED
from ._replay_calls import _CANCELLED_END
from ._replay_calls import _DENIED
from ._replay_calls import _ERROR
from ._replay_calls import _EXCLUSIVE
from ._replay_calls import _OK
from ._replay_calls import _QUEUE
from ._replay_calls import _RESUMED
from ._replay_calls import _STOPPED
from ._replay_calls import _UNKNOWN
from ._replay_calls import _about
from ._replay_calls import _Call
from ._replay_calls import _refused
from ._replay_calls import _Schedule
from ._replay_calls import _Stop
from ._replay_state import _Entry
from ._replay_state import _ReplayState

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
_NEEDS_CANCEL = (ResultStatus.CANCELLED, ResultStatus.SKIPPED)

# Batches up to this width are scanned by `interference` at every effect
# start: cheaper than building a `_Schedule`, and a scan of at most 8 calls.
_NARROW = 8

# How many (facts, decision, stage) verdicts a replay remembers at most, and
# the marker of one not seen yet (None is a verdict: no problem).
_PROBLEMS_KEPT = 256
_UNSEEN = ("unseen", "")


class Replay(_ReplayState):
    """A mutable replayer of the loop state machine."""

    # -- driving ---------------------------------------------------------

    def run(self, events: Iterable[TraceEvent]) -> tuple[int, Divergence | None, TraceEvent | None]:
        """Replay until the end or the first divergence: (events read, divergence, its event)."""
        count = 0
        event: TraceEvent | None = None
        try:
            # The hot loop, `step`'s checks inlined (a call per event costs as
            # much as a check): nothing is allocated while all is well.
            for event in events:
                count += 1
                seq = event.seq
                t = event.t
                if seq != self.last_seq + 1 or t < self.last_t:
                    self._out_of_order(seq, t)
                for c in event.causes:
                    if c >= seq or c < 0:
                        raise _Stop(
                            "TRACE-1",
                            f"causal edge {list(event.causes)} does not point back",
                            [seq],
                        )
                kind = event.kind
                if self.headless_ask is not None:
                    self._check_headless_ask(event, self.headless_ask)
                handler = self._handlers.get(kind)
                if handler is None:
                    if kind == "effect_start" and self.phase in _STOPPED:
                        self._check_rerun(event)
                    raise _Stop(
                        "LOOP-1", f"{kind} is not enabled in phase {self.phase.value}", [seq]
                    )
                self.last_seq = seq
                self.last_t = t
                counts = self._counts  # the phase the event is taken in, before it changes
                handler(self, event)
                counts[kind] += 1
        except _Stop as stop:
            divergence = Divergence(
                stop.invariant, stop.message, tuple(sorted(set(stop.seqs))), self.snapshot()
            )
            return count, divergence, event
        return count, None, None

    def _check_rerun(self, e: Any) -> None:
        """RETRY-1 for a committed call started again after an interrupt."""
        index = self.index_of.get(e.occ)
        if index is not None and self.calls[index].committed:
            call = self.calls[index]
            raise _Stop(
                "RETRY-1", f"{e.occ} re-executed after its effect committed", _about(call, e.seq)
            )

    def _out_of_order(self, seq: int, t: float) -> NoReturn:
        """TRACE-1 for an event whose seq or timestamp does not follow on."""
        if seq != self.last_seq + 1:
            raise _Stop("TRACE-1", f"seq {seq} follows {self.last_seq}", [seq])
        raise _Stop("TRACE-1", f"timestamp {t} goes back from {self.last_t}", [seq])

    def _check_headless_ask(self, e: Any, occ: str) -> None:
        """PERM-6: the headless ask `occ` is settled by the very next event."""
        if not (e.kind == "ask_resolved" and e.occ == occ):
            call = self.calls[self.index_of[occ]]
            raise _Stop("PERM-6", f"headless ask {occ} was left waiting", _about(call, e.seq))

    # -- the loop --------------------------------------------------------

    def _turn_start(self, e: Any) -> None:
        if e.turn != self.turn + 1:
            raise _Stop("LOOP-1", f"turn {e.turn} follows turn {self.turn}", [e.seq])
        self._enter(self._ENTRY_PREPARING)
        self.turn = e.turn

    def _compaction(self, e: Any) -> None:
        calls, results = set(e.calls_removed), set(e.results_removed)
        if calls != results:
            split = sorted(calls ^ results)
            raise _Stop("CLOSE-6", f"compaction separates calls from results: {split}", [e.seq])
        open_occs = self._open()
        if open_occs:
            shown = sorted(set(open_occs) & calls or open_occs)
            raise _Stop("CLOSE-6", f"compaction while {shown} open", [e.seq])
        if self.phase is Phase.STREAMING and e.step != "retry":
            raise _Stop(
                "LOOP-1", f"only an overflow retry compacts while streaming, not {e.step}", [e.seq]
            )
        problem = transcript_problem(e.messages)
        if problem is not None:
            raise _Stop(
                "CLOSE-8",
                f"{e.step} left a transcript that is not provider-valid: {problem}",
                [e.seq],
            )
        if self.phase is Phase.STREAMING:
            self._enter(self._ENTRY_PREPARING)

    def _request(self, e: Any) -> None:
        if self.calls:  # usually cleared already, when the last batch closed
            open_occs = self._open()
            if open_occs:
                first = self.calls[self.index_of[open_occs[0]]]
                raise _Stop(
                    "CLOSE-2",
                    f"provider request with {open_occs} unanswered",
                    _about(first, e.seq),
                )
            self._clear_batch()
        self._enter(self._ENTRY_STREAMING)

    def _stream_repair(self, e: Any) -> None:
        return

    def _assistant(self, e: Any) -> None:
        occs = [c.occ for c in e.calls]
        index_of = {o: i for i, o in enumerate(occs)}
        if len(index_of) != len(occs):  # an occurrence id repeats
            raise _Stop("LOOP-1", f"repeated occurrence ids in one message: {occs}", [e.seq])
        self.assistant_seq = e.seq
        if not occs:
            self._enter(self._ENTRY_ANSWERED)
            return
        self._enter(self._ENTRY_BATCH)
        self.calls = [
            _Call(c.occ, i, e.seq, c.tool, c.call_id, c.input) for i, c in enumerate(e.calls)
        ]
        self.occs = occs
        self.index_of = index_of
        self.schedule = None
        self.failed = set()
        self.effects_started = False
        self.cancelled = False
        self.stop_sourced = False

    # -- hooks and permissions -------------------------------------------

    def _hook(self, e: Any) -> None:
        call = self._call_of(e)
        problem = hook_problem(self.hooks, call.decision is not None, e)
        if problem is not None:
            raise _Stop("CHILD-6", problem, _about(call, e.seq))
        call.events.append(e.seq)
        call.hooks_run = (*call.hooks_run, e.hook)
        call.vetoed = call.vetoed or e.vetoed
        self.count("CHILD-6")

    def _decision(self, e: Any) -> None:
        call = self._call_of(e)
        if call.decision is not None:
            raise _Stop("LOOP-1", f"{e.occ} decided twice", _about(call, e.seq))
        problem = self._decision_problem(e)
        if problem is not None:
            raise _Stop(problem[0], problem[1], [call.events[0], e.seq])
        keyed = queue_key_problem(e)
        if keyed is not None:
            raise _Stop("SCHED-2", keyed, [call.events[0], e.seq])
        sure = self.recorded is not None and self._check_derived(call, e)
        decision = e.decision
        hooks = self.hooks
        if hooks or call.vetoed:
            enforced = enforcement_problem(hooks, call.tool, call.hooks_run, call.vetoed, decision)
            if enforced is not None:
                raise _Stop("CHILD-6", f"{e.occ}: {enforced}", _about(call, e.seq))
            if hooks_for(hooks, call.tool):
                self.count("CHILD-6")
        call.events.append(e.seq)
        call.decision = decision
        call.admitted = decision is _ALLOW
        call.cls = e.cls
        call.key = e.key
        call.reads = e.reads
        call.writes = e.writes
        self._count_decision(e.facts, decision, e.route)
        if sure:  # counted once the decision passed every check, as `step` counts
            self.count("AUTH-4")
        if queue_edit(e):
            self.count("SCHED-2")
        if decision is _ASK and e.route in _WAITLESS:
            self.headless_ask = e.occ

    def _check_derived(self, call: _Call, e: Any) -> bool:
        """AUTH-4: the facts include what the recorded settings give
        (`_derive`); whether the deriver was sure of anything."""
        assert self.recorded is not None
        footprint = (*e.reads, *e.writes)
        sure, problem = facts_problem(
            self.recorded, call.tool, call.input, e.facts, footprint, _batch_writes(e)
        )
        if problem is not None:
            raise _Stop("AUTH-4", f"{e.occ}: {problem}", [call.events[0], e.seq])
        return sure

    def _count_decision(self, facts: Facts, decision: Decision, route: Route) -> None:
        """`_coverage.exercised` for a decision: PERM-1 always (counted from the
        transitions), the others where their situation is present."""
        if facts.rules and any(r.behavior is RuleBehavior.DENY for r in facts.rules):
            self.count("PERM-2")
        if facts.protected or facts.secret:
            self.count("PERM-3")
        mode = facts.mode
        if mode is Mode.PLAN and facts.kind in MUTATING_KINDS:
            self.count("PERM-4")
        elif mode is Mode.DONT_ASK:
            self.count("PERM-5")
        if decision is _ASK and route in _WAITLESS:
            self.count("PERM-6")

    def _decision_problem(self, e: Any) -> tuple[str, str] | None:
        """`decision_problem(e)`, remembered for the run.

        It is a pure function of the facts, the decision and the stage;
        `Facts` is frozen and compares by value (a validated event holds enum
        members, so equal facts read alike). A run repeats the same few, and
        a lookup is several times cheaper than resolving the facts again.
        Kept small, so that a streamed trace is still replayed in constant memory.
        """
        key = (e.facts, e.decision, e.stage)
        try:
            problem = self._problems.get(key, _UNSEEN)
        except TypeError:  # unhashable facts (not a validated event): nothing to remember
            return decision_problem(e)
        if problem is _UNSEEN:
            if len(self._problems) >= _PROBLEMS_KEPT:
                self._problems.clear()
            problem = self._problems[key] = decision_problem(e)
        return problem

    def _ask_resolved(self, e: Any) -> None:
        call = self._call_of(e)
        if call.decision is not _ASK or call.approved is not None:
            raise _Stop("LOOP-1", f"{e.occ} has no pending ask", _about(call, e.seq))
        if self.headless_ask == e.occ:
            wanted = self.headless_default is _ALLOW
            if e.resolver != "headless-default" or e.approved != wanted:
                raise _Stop(
                    "PERM-6",
                    f"headless ask settled by {e.resolver} as {e.approved}, "
                    "not the configured default",
                    _about(call, e.seq),
                )
            self.headless_ask = None
        call.events.append(e.seq)
        call.approved = e.approved
        call.admitted = e.approved is True

    # -- the scheduler ---------------------------------------------------

    def _effect_start(self, e: Any) -> None:
        call = self._call_of(e, "AUTH-1")
        if call.committed:
            raise _Stop(
                "RETRY-1", f"{e.occ} re-executed after its effect committed", _about(call, e.seq)
            )
        if not call.admitted:
            raise _Stop(
                "AUTH-1", f"{e.occ} started without an allow or approved ask", _about(call, e.seq)
            )
        tools = self.tools
        if tools is not None and call.tool not in tools:
            raise _Stop(
                "AUTH-3",
                f"{e.occ} runs {call.tool!r}, which is not in the header's tool surface",
                _about(call, e.seq),
            )
        if call.running or call.closed:
            raise _Stop("LOOP-1", f"{e.occ} started while running or closed", _about(call, e.seq))
        if self.cancelled:
            raise _Stop(
                "SCHED-5", f"{e.occ} started after its batch was cancelled", _about(call, e.seq)
            )
        first = not self.effects_started
        if first:
            self._check_settled(e.seq)
            if len(self.calls) > _NARROW:
                self.schedule = _Schedule(self.calls)
        schedule = self.schedule
        if schedule is None or schedule.conflicts(call):
            broken = interference(self.calls, call)
            if broken is not None:
                raise _Stop(broken[0], broken[1], _about(broken[2], e.seq))
        if first:
            self._first_start()
        self.effects_started = True
        self._count_start(call)
        call.events.append(e.seq)
        call.running = True
        call.started = True
        call.started_t = e.t
        call.limit_s = e.limit_s
        if schedule is not None:
            schedule.count_running(call, 1)

    def _first_start(self) -> None:
        """What the batch's starts will put to the test, fixed now that
        admission is settled (AUTH-2)."""
        calls = self.calls
        schedule = self.schedule
        self.partners = schedule.footprint if schedule is not None else footprint_partners(calls)
        foreground = [c for c in calls if c.admitted and c.cls in _FOREGROUND]
        self.exclusive_pair = len(foreground) > 1 and any(c.cls is _EXCLUSIVE for c in foreground)
        if len(calls) > 1:
            self.count("AUTH-2")

    def _count_start(self, call: _Call) -> None:
        """`_coverage.exercised` for an effect start (AUTH-1 from the transitions)."""
        if self.tools is not None:
            self.count("AUTH-3")
        if call.started:
            self.count("RETRY-1")
        if self.exclusive_pair:
            self.count("SCHED-1")
            self.count("SCHED-3")
        if call.cls is _QUEUE and self._shares_key(call):
            self.count("SCHED-2")
        if call.index in self.partners:
            self.count("SCHED-6")

    def _shares_key(self, call: _Call) -> bool:
        schedule = self.schedule
        if schedule is not None:
            return len(schedule.held_on_key[call.key].calls) > 1
        key = call.key
        return any(o is not call and o.cls is _QUEUE and o.key == key for o in self.calls)

    def _check_settled(self, seq: int) -> None:
        """AUTH-2, at a batch's first effect start: every call decided, no ask pending."""
        for other in self.calls:
            if other.decision is None or (other.decision is _ASK and other.approved is None):
                raise _Stop(
                    "AUTH-2", f"effects started before {other.occ} was settled", _about(other, seq)
                )

    def _commit(self, e: Any) -> None:
        call = self._call_of(e)
        if not call.running or call.committed:
            raise _Stop(
                "LOOP-1",
                f"commit of {e.occ}, which is not running uncommitted",
                _about(call, e.seq),
            )
        if e.recovered:
            if self.phase is not Phase.INTERRUPTED:
                raise _Stop(
                    "RETRY-4",
                    f"recovered commit of {e.occ} outside an interrupt",
                    _about(call, e.seq),
                )
            call.recovered = True
            self.count("RETRY-4")
        call.events.append(e.seq)
        call.committed = True
        call.digest = e.digest
        call.commit_seq = -1 if self.phase is Phase.INTERRUPTED else e.seq

    def _effect_end(self, e: Any) -> None:
        call = self._call_of(e)
        if not call.running:
            raise _Stop(
                "LOOP-1", f"{e.occ} ended without running in the foreground", _about(call, e.seq)
            )
        outcome = e.outcome
        if outcome is EffectOutcome.DETACHED:
            raise _Stop(
                "LOOP-1",
                f"{e.occ}'s effect ended detached: only a background job's completion is",
                _about(call, e.seq),
            )
        if outcome is _UNKNOWN and self.phase is not Phase.INTERRUPTED:
            raise _Stop(
                "LOOP-1",
                f"{e.occ}'s outcome is unknown outside an interrupt",
                _about(call, e.seq),
            )
        committed = e.committed
        if committed != call.committed:
            said = "committed" if committed else "uncommitted"
            raise _Stop(
                "RETRY-2",
                f"{e.occ} ended {said}, but the trace holds {_commits(call.committed)}",
                _about(call, e.seq),
            )
        covered = call.covered
        if covered or outcome is _CANCELLED_END:
            ended = cancelled_end_problem(e.occ, outcome, committed, covered, self.stop_sourced)
            if ended is not None:
                raise _Stop("SCHED-5", ended, _about(call, e.seq))
            self.count("SCHED-5")
        if committed:
            self.count("RETRY-2")
            call.journaled = journaled(call.commit_seq, e.seq)
        if self.schedule is not None:
            self.schedule.count_running(call, -1)
        call.events.append(e.seq)
        call.running = False
        call.finished = True
        call.outcome = outcome
        if outcome is EffectOutcome.ERROR:
            self.failed.add(call.occ)

    def _handshake(self, e: Any) -> None:
        call = self._call_of(e)
        if call.cls is not _BACKGROUND or not call.running:
            raise _Stop(
                "SCHED-4",
                f"handshake for {e.occ}, which is not a running background call",
                _about(call, e.seq),
            )
        if e.job in self.jobs:
            raise _Stop("SCHED-4", f"job id {e.job} handed out twice", [self.jobs[e.job][1], e.seq])
        if self.schedule is not None:
            self.schedule.count_running(call, -1)
        self.jobs[e.job] = (e.occ, e.seq)
        call.events.append(e.seq)
        call.running = False
        call.finished = True
        call.outcome = EffectOutcome.OK

    def _job_done(self, e: Any) -> None:
        paired = self.jobs.get(e.job)
        if paired is None or paired[0] != e.occ:
            raise _Stop(
                "SCHED-4", f"completion of {e.job} for {e.occ} pairs with no handshake", [e.seq]
            )
        detached = detached_problem(e)
        if detached is not None:
            raise _Stop("SCHED-4", detached, [paired[1], e.seq])
        del self.jobs[e.job]

    # -- closure ---------------------------------------------------------

    def _result(self, e: Any) -> None:
        call = self._call_of(e, "CLOSE-4")
        if call.closed:
            raise _Stop("CLOSE-1", f"second result for {e.occ}", _about(call, e.seq))
        resumed = self.phase is _RESUMED
        if resumed and not call.committed:
            raise _Stop(
                "RETRY-2",
                f"after resume only effects the trace shows committed are answered, not {e.occ}",
                _about(call, e.seq),
            )
        status = e.status
        needs_cancel = status in _NEEDS_CANCEL
        if needs_cancel and not (self.cancelled or (call.covered and status is _CANCELLED)):
            raise _Stop(
                "SCHED-5",
                f"{e.occ} was {status.value} with no cancel covering it or interrupt",
                _about(call, e.seq),
            )
        if call.running:
            raise _Stop("LOOP-1", f"result for {e.occ} while its effect runs", _about(call, e.seq))
        if status is _OK and not call.finished:
            raise _Stop(
                "LOOP-1", f"ok result for {e.occ} with no finished effect", _about(call, e.seq)
            )
        if status is _DENIED and not _refused(call):
            raise _Stop(
                "LOOP-1", f"denied result for {e.occ}, which was not refused", _about(call, e.seq)
            )
        ended_cancelled = call.outcome is _CANCELLED_END
        if ended_cancelled:
            closed_as = cancelled_result_problem(e.occ, call.outcome, call.committed, status)
            if closed_as is not None:
                raise _Stop("SCHED-5", closed_as, _about(call, e.seq))
        if call.committed:
            reported = commit_report_problem(
                e.occ, True, call.outcome, call.digest, call.journaled, status, e.content
            )
            if reported is not None:
                raise _Stop("RETRY-2", reported, _about(call, e.seq))
        failed = self.failed
        if needs_cancel or ended_cancelled or len(failed) > (call.occ in failed):
            self.count("SCHED-5")
        if resumed or call.committed:
            self.count("RETRY-2")
        call.events.append(e.seq)
        call.closed = True
        call.status = status
        if status is _ERROR:
            failed.add(call.occ)

    def _results_sent(self, e: Any) -> None:
        for c in self.calls:
            if not c.closed:
                raise _Stop(
                    "CLOSE-2", f"results sent without a result for {c.occ}", _about(c, e.seq)
                )
        if list(e.occs) != self.occs:
            raise _Stop(
                "CLOSE-3",
                f"results sent as {list(e.occs)}, calls were {self.occs}",
                [self.assistant_seq, e.seq],
            )
        self._check_ids(e)
        self._enter(self._ENTRY_READY)
        self._clear_batch()

    def _check_ids(self, e: Any) -> None:
        """CLOSE-3/CLOSE-4 on the ids the batch's results message held."""
        calls = self.calls
        if len(e.call_ids) == len(calls) and all(
            i == c.call_id for i, c in zip(e.call_ids, calls, strict=True)
        ):
            return
        wrong = ids_problem(calls, e.call_ids)
        if wrong is not None:
            raise _Stop(wrong[0], wrong[1], [self.assistant_seq, e.seq])

    def _cancel(self, e: Any) -> None:
        problem = cancel_problem(self.calls, self.index_of, e, self.causes_recorded)
        used: int | None = None
        if problem is None and self.causes_recorded:
            problem, used = cancel_source_problem(e.cause, e.causes, self.sources)
        if problem is not None:
            raise _Stop("SCHED-5", problem, [self.assistant_seq, e.seq])
        if used is not None:
            del self.sources[used]
        if not e.occs:
            self.cancelled = True
            self.stop_sourced = True
            return
        for occ in e.occs:
            call = self.calls[self.index_of[occ]]
            call.events.append(e.seq)
            call.covered = True

    def _interrupt(self, e: Any) -> None:
        self._enter(self._ENTRY_INTERRUPTED)
        self.cancelled = True
        used = named_source(e.causes, self.sources, STOP_SOURCES) if self.sources else None
        if used is not None:
            del self.sources[used]
        if used is not None or not self.causes_recorded:
            self.stop_sourced = True

    def _source(self, e: Any) -> None:
        self.sources[e.seq] = e.kind

    _signal = _stop_request = _sink_error = _source

    def _resume(self, e: Any) -> None:
        pending = sum(1 for c in self.calls if c.committed and not c.closed)
        if pending:
            self.count("RETRY-1", pending)
        self._enter(self._ENTRY_RESUMED)

    def _repair(self, e: Any) -> None:
        open_occs = self._open()
        if list(e.stubbed) != open_occs:
            extra = sorted(set(e.stubbed) - set(open_occs))
            what = f"stubs closed or unknown {extra}" if extra else f"leaves {open_occs} open"
            raise _Stop("CLOSE-5", f"repair {what}", [self.assistant_seq, e.seq])
        stubbed = committed_stub(self.calls, e)
        if stubbed is not None:
            raise _Stop("RETRY-2", stubbed, [self.assistant_seq, e.seq])
        stubs = stub_problem(self.calls, e)
        if stubs is not None:
            raise _Stop("RETRY-3", f"repair {stubs}", [self.assistant_seq, e.seq])
        recovered = recovered_problem(self.calls, e)
        if recovered is not None:
            raise _Stop("RETRY-4", f"repair {recovered}", [self.assistant_seq, e.seq])
        if e.recovered or any(c.recovered for c in self.calls):
            self.count("RETRY-4")
        self._check_ids(e)
        if e.stubbed:
            self.count("RETRY-3", len(e.stubbed))
        if self.calls:
            self.count("CLOSE-3")
            self.count("CLOSE-4")
        self._enter(self._ENTRY_READY)
        self._clear_batch()

    # -- children and the end --------------------------------------------

    def _spawn(self, e: Any) -> None:
        broken = spawn_violation(
            e.parent_mode, e.parent_tools, e.child_mode, e.child_tools, e.requested_mode
        )
        if broken is not None:
            raise _Stop(broken[0], f"spawn of {e.agent_id}: {broken[1]}", [e.seq])
        if e.parent_mode is Mode.PLAN or e.child_mode is Mode.PLAN:
            self.count("CHILD-3")

    def _run_end(self, e: Any) -> None:
        if e.status is RunStatus.COMPLETED:
            if self.phase is not Phase.ANSWERED:
                raise _Stop(
                    "LOOP-2",
                    f"completed in phase {self.phase.value}, not after an answer",
                    [e.seq],
                )
            if self.jobs:
                job, (occ, seq) = next(iter(self.jobs.items()))
                raise _Stop(
                    "SCHED-4",
                    f"run completed with job {job} of {occ} never completed",
                    [seq, e.seq],
                )
        open_occs = self._open()
        if e.status is not RunStatus.INTERRUPTED and open_occs:
            raise _Stop(
                "CLOSE-2", f"run ended with {open_occs} unanswered", [self.assistant_seq, e.seq]
            )
        if e.status is RunStatus.COMPLETED:
            self.count("LOOP-2")
            self.count("SCHED-4")
        self._enter(self._ENTRY_ENDED)


_ENTRIES: Mapping[Phase, _Entry] = MappingProxyType(
    {
        phase: (
            phase,
            # A plain dict: its `get` is the one lookup per event.
            {kind: getattr(Replay, "_" + kind) for kind in sorted(kinds)},
            phase.value,
        )
        for phase, kinds in ENABLED.items()
    }
)
Replay._ENTRY_READY = _ENTRIES[Phase.READY]
Replay._ENTRY_PREPARING = _ENTRIES[Phase.PREPARING]
Replay._ENTRY_STREAMING = _ENTRIES[Phase.STREAMING]
Replay._ENTRY_BATCH = _ENTRIES[Phase.BATCH]
Replay._ENTRY_ANSWERED = _ENTRIES[Phase.ANSWERED]
Replay._ENTRY_INTERRUPTED = _ENTRIES[Phase.INTERRUPTED]
Replay._ENTRY_RESUMED = _ENTRIES[Phase.RESUMED]
Replay._ENTRY_ENDED = _ENTRIES[Phase.ENDED]
