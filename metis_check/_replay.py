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
  handlers (`_ENTRIES`, below), so one lookup both checks LOOP-1 and finds
  the handler;
- decisions: `decision_problem` is remembered per (facts, decision, stage),
  which a run repeats; resolving the facts again costs several lookups' worth
  (`_replay_decisions`);
- wide batches: `_Schedule` (`_replay_calls`) keeps counters and cursors that
  say when the shared `interference` scan would find a conflict, so the scan
  (O(b) for a batch of b calls) runs only then, not at every effect start: a
  batch costs O(b), not O(b^2).

Where the parts are: `_replay_state` holds the mutable state and the helpers
every handler shares; the handlers are mixins on it, one module a family: the
loop's turns and requests (`_replay_loop`), a call's admission
(`_replay_decisions`), the scheduler (`_replay_effects`), and how a batch
closes or stops (`_replay_closure`). `_replay_calls` holds the records of the
batch's calls. `Replay` puts the families together and drives them.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from typing import NoReturn

from metis_model._loop_state import ENABLED
from metis_model._loop_state import Divergence
from metis_model._loop_state import Phase
from metis_trace import TraceEvent

from ._replay_calls import _STOPPED
from ._replay_calls import _about
from ._replay_calls import _Stop
from ._replay_closure import _ClosureHandlers
from ._replay_decisions import _DecisionHandlers
from ._replay_effects import _EffectHandlers
from ._replay_loop import _LoopHandlers
from ._replay_state import _Entry


class Replay(_LoopHandlers, _DecisionHandlers, _EffectHandlers, _ClosureHandlers):
    """A mutable replayer of the loop state machine."""

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


# Each phase's entry (`_replay_state._Entry`), now that `Replay` has every handler.
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
