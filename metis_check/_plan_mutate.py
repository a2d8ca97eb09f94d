"""Turn logs broken on purpose: one edit per PLAN ID (the pattern of `_mutate.py`).

Each mutator takes a valid simulated turn and returns a copy in which the
named invariant is the first to fail, or None when the turn lacks what the
edit needs. `broken_turn` searches simulated turns for one that can be broken.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from metis_trace import HARD_STEP_MAX
from metis_trace import Decision
from metis_trace import ErrorClass
from metis_trace import FinalRecord
from metis_trace import FrameworkRecord
from metis_trace import FrameworkStep
from metis_trace import PathRecord
from metis_trace import ProbeOutcome
from metis_trace import RecoveryRecord
from metis_trace import ResumeRecord
from metis_trace import Route
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import TurnHeader
from metis_trace import TurnRecord

from ._plan_generate import SimTurn
from ._plan_generate import simulate_turn

__all__ = ["PLAN_MUTATORS", "break_turn", "broken_turn"]

Records = list[TurnRecord]
Mutator = Callable[[TurnHeader, Records, random.Random], tuple[TurnHeader, Records] | None]
_RAN = (StepStatus.OK, StepStatus.ERROR)


def _find(records: Records, pred: Callable[[TurnRecord], bool]) -> int | None:
    return next((i for i, r in enumerate(records) if pred(r)), None)


def _with(records: Records, i: int, **update: Any) -> Records:
    out = list(records)
    out[i] = records[i].model_copy(update=update)
    return out


def _step(pred: Callable[[StepRecord], bool]) -> Callable[[TurnRecord], bool]:
    return lambda r: isinstance(r, StepRecord) and pred(r)


def _with_part(
    h: TurnHeader, rs: Records, i: int | None, part: str, **update: Any
) -> tuple[TurnHeader, Records] | None:
    """The record at `i` (None: no edit) with its `part`, a record in it, updated."""
    if i is None:
        return None
    inner = getattr(rs[i], part)
    assert inner is not None
    return h, _with(rs, i, **{part: inner.model_copy(update=update)})


def _inserted(records: Records, i: int, record: TurnRecord) -> Records:
    """`record` inserted right after the one at `i`."""
    return [*records[: i + 1], record, *records[i + 1 :]]


def _recovered_after(records: Records, i: int, cls: ErrorClass, committed_before: int) -> Records:
    """A recovery right after the step record at `i`."""
    rec = records[i]
    assert isinstance(rec, StepRecord)
    recovery = RecoveryRecord(
        after_step=rec.index, error_class=cls, committed_before=committed_before
    )
    return _inserted(records, i, recovery)


def _with_first_step(
    h: TurnHeader,
    rs: Records,
    i: int,
    args: Callable[[int, FrameworkStep], dict[str, Any] | None],
) -> tuple[TurnHeader, Records] | None:
    """The framework record at `i` with its first step for which `args` (given
    the step's 0-based position and the step) names arguments, updated with them."""
    rec = rs[i]
    assert isinstance(rec, FrameworkRecord)
    steps = list(rec.framework.steps)
    for k, step in enumerate(steps):
        update = args(k, step)
        if update is not None:
            steps[k] = step.model_copy(update={"args": {**step.args, **update}})
            fw = rec.framework.model_copy(update={"steps": tuple(steps)})
            return h, _with(rs, i, framework=fw)
    return None


def _plan_1(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.status in _RAN and s.decision is Decision.ALLOW))
    return None if i is None else (h, _with(rs, i, decision=Decision.DENY))


def _plan_2(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, lambda r: isinstance(r, FrameworkRecord) and r.valid)
    if i is None:
        return None
    return _with_first_step(
        h, rs, i, lambda k, s: {"from_step": k + 1} if "from_step" in s.args else None
    )


def _plan_3(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.status is StepStatus.SKIPPED_EMPTY))
    if i is None:
        return None
    return h, _with(rs, i, status=StepStatus.OK, committed=True, decision=Decision.ALLOW, occ="9.9")


def _plan_4(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.committed))
    if i is None:
        return None
    committed = sum(1 for r in rs[: i + 1] if isinstance(r, StepRecord) and r.committed)
    return h, _recovered_after(rs, i, ErrorClass.WRONG_ARGS, committed)


def _plan_5(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.error_class is ErrorClass.OPERATIONAL and not s.committed))
    if i is None or any(isinstance(r, StepRecord) and r.committed for r in rs[:i]):
        return None
    return h, _recovered_after(rs, i, ErrorClass.OPERATIONAL, 0)


def _plan_6(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    for i, r in enumerate(rs):
        if isinstance(r, ResumeRecord) and r.committed:
            done = next(
                x
                for x in rs[:i]
                if isinstance(x, StepRecord) and x.index == r.committed[0] and x.committed
            )
            again = done.model_copy(update={"segment": r.segment})
            return h, _inserted(rs, i, again)
    return None


def _hit(rs: Records) -> int | None:
    return _find(rs, lambda r: isinstance(r, PathRecord) and r.outcome is ProbeOutcome.HIT)


def _plan_7(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    return _with_part(h, rs, _hit(rs), "stored", executors="sha256:an-older-catalog")


def _plan_8(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _hit(rs)
    j = _find(rs, lambda r: isinstance(r, FrameworkRecord))
    if i is None or j is None:
        return None
    return _with_first_step(
        h,
        rs,
        j,
        lambda k, s: {"path": "Reports/not-asked-for.md"} if s.tool == "write_doc" else None,
    )


def _plan_9(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.approval is not None and s.status in _RAN))
    return _with_part(h, rs, i, "approval", args_digest="sha256:other-arguments")


def _plan_10(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    if h.task is None:
        return None
    return h.model_copy(update={"route": Route.INTERACTIVE, "actor": "someone-else"}), rs


def _plan_11(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, lambda r: isinstance(r, FinalRecord))
    if i is None:
        return None
    rec = rs[i]
    assert isinstance(rec, FinalRecord)
    more = rec.effects.model_copy(update={"committed": rec.effects.committed + 1})
    return h, _with(rs, i, effects=more)


def _plan_12(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    return h.model_copy(update={"cap": HARD_STEP_MAX + 4}), rs


def _plan_13(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.status is StepStatus.OK and bool(s.resolved_args)))
    if i is None:
        return None
    rec = rs[i]
    assert isinstance(rec, StepRecord) and rec.resolved_args is not None
    key = next(iter(rec.resolved_args))
    changed = {**rec.resolved_args, key: "${RUNTIME:owner}"}
    return h, _with(rs, i, resolved_args=changed)


def _plan_14(h: TurnHeader, rs: Records, rng: random.Random) -> tuple[TurnHeader, Records] | None:
    i = _find(rs, _step(lambda s: s.status is StepStatus.REFUSED and "holds data" in s.error))
    if i is None:
        return None
    return h, _with(rs, i, status=StepStatus.OK, error_class=None, error="")


PLAN_MUTATORS: dict[str, Mutator] = {
    "PLAN-1": _plan_1,
    "PLAN-2": _plan_2,
    "PLAN-3": _plan_3,
    "PLAN-4": _plan_4,
    "PLAN-5": _plan_5,
    "PLAN-6": _plan_6,
    "PLAN-7": _plan_7,
    "PLAN-8": _plan_8,
    "PLAN-9": _plan_9,
    "PLAN-10": _plan_10,
    "PLAN-11": _plan_11,
    "PLAN-12": _plan_12,
    "PLAN-13": _plan_13,
    "PLAN-14": _plan_14,
}


def break_turn(
    turn: SimTurn, invariant_id: str, rng: random.Random
) -> tuple[TurnHeader, Sequence[TurnRecord]] | None:
    """Edit a valid turn so that `invariant_id` is broken; None if it can't be."""
    return PLAN_MUTATORS[invariant_id](turn.header, list(turn.records), rng)


def broken_turn(
    invariant_id: str, seed: int = 0, attempts: int = 400
) -> tuple[TurnHeader, Sequence[TurnRecord]]:
    """The first simulated turn from `seed` on that can be broken for the ID."""
    for s in range(seed, seed + attempts):
        broken = break_turn(simulate_turn(s), invariant_id, random.Random(s))
        if broken is not None:
            return broken
    raise LookupError(f"no simulated turn in {attempts} could be broken for {invariant_id}")
