"""The replay's handlers of how a batch closes: results, the results
message, cancels and their sources, interrupts, resume, and repair."""

from __future__ import annotations

from typing import Any

from metis_model._causes import STOP_SOURCES
from metis_model._causes import cancel_source_problem
from metis_model._causes import cancelled_result_problem
from metis_model._causes import named_source
from metis_model._closure import cancel_problem
from metis_model._closure import ids_problem
from metis_model._resume import committed_stub
from metis_model._resume import recovered_problem
from metis_model._resume import stub_problem
from metis_model._scheduler import commit_report_problem
from metis_trace import ResultStatus

from ._replay_calls import _CANCELLED
from ._replay_calls import _CANCELLED_END
from ._replay_calls import _DENIED
from ._replay_calls import _ERROR
from ._replay_calls import _OK
from ._replay_calls import _RESUMED
from ._replay_calls import _about
from ._replay_calls import _refused
from ._replay_calls import _Stop
from ._replay_state import _ReplayState

_NEEDS_CANCEL = (ResultStatus.CANCELLED, ResultStatus.SKIPPED)


class _ClosureHandlers(_ReplayState):
    """The handlers that close a batch, or stop it."""

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
