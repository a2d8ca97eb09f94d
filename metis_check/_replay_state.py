"""The state a replay keeps, and what every handler of it shares.

`_ReplayState` is the mutable counterpart of the specification's `LoopState`
(`snapshot` freezes it, for reports), with the checks counted so far and the
helpers every handler uses: entering a phase, finding the call an event is
about, clearing a closed batch. The handler families are mixins on it, which
`Replay` (`_replay.py`) puts together.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from typing import ClassVar

from metis_model._derive import Recorded
from metis_model._loop_state import ENABLED
from metis_model._loop_state import Call
from metis_model._loop_state import LoopState
from metis_model._loop_state import Phase
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import Route

from ._replay_calls import _Call
from ._replay_calls import _Schedule
from ._replay_calls import _Stop

# Per phase: the kinds it enables (LOOP-1) and their handlers, filled in on
# `Replay` once its handlers exist (`_replay.py`). The entries are what
# entering a phase sets, precomputed: hashing an enum member costs a
# Python-level call, and the replay enters a phase four times a turn.
_Handler = Callable[["_ReplayState", Any], None]
_Entry = tuple[Phase, Mapping[str, _Handler], str]


class _ReplayState:
    """The replay's state, with the helpers its handlers share."""

    # The entry of each phase a handler moves to, set on `Replay`.
    _ENTRY_READY: ClassVar[_Entry]
    _ENTRY_PREPARING: ClassVar[_Entry]
    _ENTRY_STREAMING: ClassVar[_Entry]
    _ENTRY_BATCH: ClassVar[_Entry]
    _ENTRY_ANSWERED: ClassVar[_Entry]
    _ENTRY_INTERRUPTED: ClassVar[_Entry]
    _ENTRY_RESUMED: ClassVar[_Entry]
    _ENTRY_ENDED: ClassVar[_Entry]

    def __init__(
        self,
        mode: Mode,
        route: Route,
        headless_default: Decision,
        tools: frozenset[str] | None = None,
        hooks: tuple[HookRef, ...] = (),
        recorded: Recorded | None = None,
        causes_recorded: bool = True,
    ) -> None:
        self.mode = mode
        self.recorded = recorded
        # SCHED-5's sources (`_causes`): recorded from version 3 on; the
        # unused source events (seq -> kind); the batch's stop explains a
        # cancelled effect.
        self.causes_recorded = causes_recorded
        self.sources: dict[int, str] = {}
        self.stop_sourced = False
        self.route = route
        self.headless_default = headless_default
        self.tools = tools
        self.hooks = hooks
        self.hook_ids = frozenset(h.id for h in hooks)
        # The checks that found something to check (`_coverage.exercised`), beyond
        # TRACE-1 and LOOP-1, which every accepted event counts.
        self.ex: dict[str, int] = {}
        # Every enabled (phase, kind) transition is counted, from zero.
        self.counts: dict[str, dict[str, int]] = {
            p.value: dict.fromkeys(ENABLED[p], 0) for p in Phase
        }
        self._enter(self._ENTRY_READY)
        self._problems: dict[tuple[Facts, Decision, str], tuple[str, str] | None] = {}
        self.turn = 0
        self.calls: list[_Call] = []
        self.occs: list[str] = []  # the batch's occurrences, in the assistant's order
        self.index_of: dict[str, int] = {}
        self.schedule: _Schedule | None = None  # for a wide batch, once effects start
        # What the batch's effect starts put to the test, fixed at its first
        # start (admission is settled then): SCHED-1/3, SCHED-6 partners.
        self.exclusive_pair = False
        self.partners: set[int] = set()
        self.failed: set[str] = set()  # occurrences that failed (SCHED-5's siblings)
        self.assistant_seq = -1
        self.effects_started = False
        self.cancelled = False
        self.jobs: dict[str, tuple[str, int]] = {}
        self.headless_ask: str | None = None
        self.last_seq = -1
        self.last_t = float("-inf")

    def count(self, inv: str, n: int = 1) -> None:
        self.ex[inv] = self.ex.get(inv, 0) + n

    def transitions(self) -> dict[tuple[str, str], int]:
        """How often each (phase, event kind) transition was taken, if at all."""
        return {
            (phase, kind): n
            for phase, counts in self.counts.items()
            for kind, n in counts.items()
            if n
        }

    def snapshot(self) -> LoopState:
        """The frozen `LoopState` this replay stands for (for reports)."""
        calls = tuple(
            Call(
                occ=c.occ,
                index=c.index,
                tool=c.tool,
                call_id=c.call_id,
                decision=c.decision,
                approved=c.approved,
                cls=c.cls,
                key=c.key,
                reads=c.reads,
                writes=c.writes,
                hooks_run=c.hooks_run,
                vetoed=c.vetoed,
                running=c.running,
                started=c.started,
                started_t=c.started_t,
                limit_s=c.limit_s,
                finished=c.finished,
                committed=c.committed,
                digest=c.digest,
                commit_seq=c.commit_seq,
                journaled=c.journaled,
                recovered=c.recovered,
                covered=c.covered,
                outcome=c.outcome,
                status=c.status,
                events=tuple(c.events),
                input=c.input,
            )
            for c in self.calls
        )
        return LoopState(
            phase=self.phase,
            turn=self.turn,
            mode=self.mode,
            route=self.route,
            headless_default=self.headless_default,
            tools=self.tools,
            hooks=self.hooks,
            calls=calls,
            index_of=MappingProxyType(dict(self.index_of)),
            assistant_seq=self.assistant_seq,
            effects_started=self.effects_started,
            cancelled=self.cancelled,
            causes_recorded=self.causes_recorded,
            sources=MappingProxyType(dict(self.sources)),
            stop_sourced=self.stop_sourced,
            jobs=MappingProxyType(dict(self.jobs)),
            headless_ask=self.headless_ask,
            last_seq=self.last_seq,
            last_t=self.last_t,
            recorded=self.recorded,
        )

    def _enter(self, entry: _Entry) -> None:
        self.phase, self._handlers, name = entry
        self._counts = self.counts[name]

    def _call_of(self, e: Any, inv: str = "LOOP-1") -> _Call:
        """The call of the current batch that `e` is about; stopped at `inv` if none."""
        index = self.index_of.get(e.occ)
        if index is None:
            raise _Stop(inv, f"{e.occ} is not a call of the current batch", [e.seq])
        return self.calls[index]

    def _open(self) -> list[str]:
        return [c.occ for c in self.calls if not c.closed]

    def _clear_batch(self) -> None:
        self.calls = []
        self.occs = []
        self.index_of = {}
        self.schedule = None
        self.failed = set()
