"""A turn's execution as a small state machine: runs, pauses, resumes, recovery.

This is the part of the plan model that PLAN-4, PLAN-5 and PLAN-6 are about,
abstracted to what they need: one slot per step of the current attempt
(mutating or not, pending / done / failed / skipped, committed, how many times
it ran), the turn's phase, the last failure, the committed count and the
recoveries. `protocol_step` is the runtime's protocol (what may happen next);
`observe` applies an action without asking whether it was allowed (the turn
log checker folds a real log with it), and `bad` names the invariants a state
breaks. The z3 encoding (`metis_proofs/_plan_turn.py`, its terms in
`_plan_turn_sym.py`) is built from these enums and tested to agree with
`protocol_step` and `bad` on concrete states.

Ablations weaken the protocol on purpose: `resume-repeats-mutation` (a resume
forgets the done state and plans everything again), `recovery-after-commit`
(recovery allowed after an effect committed), `recover-operational` (an
operational failure "recovered" by another plan).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import attrs

__all__ = [
    "EXEC_ABLATIONS",
    "Act",
    "ActKind",
    "ExecState",
    "Failure",
    "Outcome",
    "Slot",
    "SlotStatus",
    "TurnPhase",
    "bad",
    "enabled",
    "initial_exec",
    "observe",
    "protocol_step",
]


class SlotStatus(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


class TurnPhase(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    ENDED = "ended"


class Failure(StrEnum):
    NONE = "none"
    STRUCTURAL = "structural"
    OPERATIONAL = "operational"
    DENIED = "denied"


class Outcome(StrEnum):
    OK = "ok"
    SKIP = "skip"
    STRUCTURAL = "structural"
    OPERATIONAL = "operational"
    DENIED = "denied"


class ActKind(StrEnum):
    RUN = "run"
    PAUSE = "pause"
    RESUME = "resume"
    RECOVER = "recover"
    END = "end"


EXEC_ABLATIONS: dict[str, str] = {
    "resume-repeats-mutation": "PLAN-6",
    "recovery-after-commit": "PLAN-4",
    "recover-operational": "PLAN-5",
}


@attrs.frozen
class Slot:
    mutating: bool
    status: SlotStatus = SlotStatus.PENDING
    committed: bool = False
    runs: int = 0
    repeated: bool = False  # it ran again after its effect had committed


@attrs.frozen
class ExecState:
    slots: tuple[Slot, ...]
    phase: TurnPhase = TurnPhase.RUNNING
    failure: Failure = Failure.NONE
    committed: int = 0  # effects committed in the turn, every attempt
    recoveries: int = 0
    recovered_after_commit: bool = False
    recovered_after_operational: bool = False


@attrs.frozen
class Act:
    kind: ActKind
    slot: int = 0  # RUN
    outcome: Outcome = Outcome.OK  # RUN
    commit: bool = False  # RUN: the step's effect committed


def initial_exec(mutating: Iterable[bool]) -> ExecState:
    return ExecState(tuple(Slot(m) for m in mutating))


_FAILURE = {
    Outcome.STRUCTURAL: Failure.STRUCTURAL,
    Outcome.OPERATIONAL: Failure.OPERATIONAL,
    Outcome.DENIED: Failure.DENIED,
}
_STATUS = {
    Outcome.OK: SlotStatus.DONE,
    Outcome.SKIP: SlotStatus.SKIPPED,
    Outcome.STRUCTURAL: SlotStatus.FAILED,
    Outcome.OPERATIONAL: SlotStatus.FAILED,
    Outcome.DENIED: SlotStatus.FAILED,
}


def _next_pending(s: ExecState) -> int | None:
    return next((i for i, x in enumerate(s.slots) if x.status is SlotStatus.PENDING), None)


def observe(s: ExecState, act: Act, ablations: frozenset[str] = frozenset()) -> ExecState:
    """The state after `act`, whether or not the protocol allowed it."""
    if act.kind is ActKind.RUN:
        ran = list(s.slots)
        old = ran[act.slot]
        commit = act.commit and old.mutating and act.outcome is not Outcome.SKIP
        ran[act.slot] = Slot(
            old.mutating,
            _STATUS[act.outcome],
            old.committed or commit,
            old.runs + 1,
            old.repeated or old.committed,
        )
        return attrs.evolve(
            s,
            slots=tuple(ran),
            failure=_FAILURE.get(act.outcome, s.failure),
            committed=s.committed + int(commit),
        )
    if act.kind is ActKind.PAUSE:
        return attrs.evolve(s, phase=TurnPhase.PAUSED)
    if act.kind is ActKind.RESUME:
        slots = s.slots
        if "resume-repeats-mutation" in ablations:
            # The done state is forgotten: every step is planned again (the world,
            # its committed effects and run counts, is not).
            slots = tuple(attrs.evolve(x, status=SlotStatus.PENDING) for x in slots)
        return attrs.evolve(s, slots=slots, phase=TurnPhase.RUNNING)
    if act.kind is ActKind.RECOVER:
        return attrs.evolve(
            s,
            slots=tuple(Slot(x.mutating) for x in s.slots),
            failure=Failure.NONE,
            recoveries=s.recoveries + 1,
            recovered_after_commit=s.recovered_after_commit or s.committed > 0,
            recovered_after_operational=s.recovered_after_operational
            or s.failure is Failure.OPERATIONAL,
        )
    return attrs.evolve(s, phase=TurnPhase.ENDED)


def enabled(s: ExecState, act: Act, ablations: frozenset[str] = frozenset()) -> bool:
    """Whether the runtime's protocol allows `act` in `s`."""
    running = s.phase is TurnPhase.RUNNING
    if act.kind is ActKind.RUN:
        if not (running and s.failure is Failure.NONE and act.slot == _next_pending(s)):
            return False
        slot = s.slots[act.slot]
        return not act.commit or (slot.mutating and act.outcome is not Outcome.SKIP)
    if act.kind is ActKind.PAUSE:
        return running and s.failure is Failure.NONE and _next_pending(s) is not None
    if act.kind is ActKind.RESUME:
        return s.phase is TurnPhase.PAUSED
    if act.kind is ActKind.RECOVER:
        recoverable = s.failure is Failure.STRUCTURAL or (
            "recover-operational" in ablations and s.failure is Failure.OPERATIONAL
        )
        clean = s.committed == 0 or "recovery-after-commit" in ablations
        return running and recoverable and clean and s.recoveries == 0
    return running and (s.failure is not Failure.NONE or _next_pending(s) is None)


def protocol_step(
    s: ExecState, act: Act, ablations: frozenset[str] = frozenset()
) -> ExecState | None:
    """The protocol's next state, or None when `act` is not allowed in `s`."""
    return observe(s, act, ablations) if enabled(s, act, ablations) else None


def bad(s: ExecState) -> tuple[str, ...]:
    """The invariant IDs state `s` breaks."""
    out = []
    if s.recoveries > 1 or s.recovered_after_commit:
        out.append("PLAN-4")
    if s.recovered_after_operational:
        out.append("PLAN-5")
    if any(x.repeated for x in s.slots):
        out.append("PLAN-6")
    return tuple(out)
