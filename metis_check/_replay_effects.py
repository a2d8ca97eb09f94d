"""The replay's handlers of the scheduler: effect starts (a wide batch's
checked against its `_Schedule`), commits, effect ends, and the background
jobs' handshakes and completions."""

from __future__ import annotations

from typing import Any

from metis_model._causes import cancelled_end_problem
from metis_model._interference import footprint_partners
from metis_model._interference import interference
from metis_model._loop_state import _FOREGROUND
from metis_model._loop_state import Phase
from metis_model._scheduler import _commits
from metis_model._scheduler import detached_problem
from metis_model._scheduler import journaled
from metis_trace import EffectOutcome

from ._replay_calls import _ASK
from ._replay_calls import _BACKGROUND
from ._replay_calls import _CANCELLED_END
from ._replay_calls import _EXCLUSIVE
from ._replay_calls import _QUEUE
from ._replay_calls import _UNKNOWN
from ._replay_calls import _about
from ._replay_calls import _Call
from ._replay_calls import _Schedule
from ._replay_calls import _Stop
from ._replay_state import _ReplayState

# Batches up to this width are scanned by `interference` at every effect
# start: cheaper than building a `_Schedule`, and a scan of at most 8 calls.
_NARROW = 8


class _EffectHandlers(_ReplayState):
    """The scheduler's handlers: effects and jobs."""

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
