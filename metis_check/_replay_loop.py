"""The replay's handlers of the loop itself: turns, requests, compaction,
the assistant's message that opens a batch, spawns, and the run's end."""

from __future__ import annotations

from typing import Any

from metis_model._children import spawn_violation
from metis_model._context import transcript_problem
from metis_model._loop_state import Phase
from metis_trace import Mode
from metis_trace import RunStatus

from ._replay_calls import _about
from ._replay_calls import _Call
from ._replay_calls import _Stop
from ._replay_state import _ReplayState


class _LoopHandlers(_ReplayState):
    """The loop's handlers: one per event kind."""

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
