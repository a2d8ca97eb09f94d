"""SCHED-5's causes, read from events rather than from a cancel's claim.

A cancel names its cause, and the cause is the runtime's own word unless
something else in the trace shows it (specs/scheduler.md, "Causes"):

- a `user` or `parent` cancel names, among its `causes`, a `signal` or
  `stop_request` event that no other cancel or interrupt used (the signal the
  process received, or the API call that asked it to stop, with its time);
- a `sink_failure` cancel names an unused `sink_error` event;
- a `timeout` cancel states the limit each call it names recorded on its
  `effect_start`, and each ran that long;
- an effect that ends `cancelled` was named by a timeout, or its batch was
  cancelled, or the interrupt that stopped it names its source; a call a
  timeout named ends `cancelled` unless its effect committed; and a call
  whose effect ended `cancelled` (uncommitted) has a `cancelled` result.

Traces of version 2 (before `trace._events.CAUSES_VERSION`) recorded no
sources and no limits: their cancels are checked as version 2 stated SCHED-5
(`causes_recorded=False`). The functions here are shared by `_loop.step` and
the fast replay, so the two cannot disagree on them.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping

from metis_trace import CancelCause
from metis_trace import EffectOutcome
from metis_trace import ResultStatus

__all__ = [
    "SINK_SOURCES",
    "SOURCE_KINDS",
    "STOP_SOURCES",
    "cancel_source_problem",
    "cancelled_end_problem",
    "cancelled_result_problem",
    "limit_problem",
    "named_source",
]

STOP_SOURCES: tuple[str, ...] = ("signal", "stop_request")
SINK_SOURCES: tuple[str, ...] = ("sink_error",)
SOURCE_KINDS: tuple[str, ...] = (*STOP_SOURCES, *SINK_SOURCES)
# Limits are recorded twice from one float (the call's, then the cancel's);
# a margin only for a producer that rounds them differently.
_LIMIT_EPS = 1e-9


def _kinds_for(cause: CancelCause) -> tuple[str, ...]:
    if cause in (CancelCause.USER, CancelCause.PARENT):
        return STOP_SOURCES
    if cause is CancelCause.SINK_FAILURE:
        return SINK_SOURCES
    return ()  # a timeout's source is the clock: its limit and the call's times


def named_source(
    causes: Iterable[int], sources: Mapping[int, str], kinds: tuple[str, ...]
) -> int | None:
    """The first unused source event of one of `kinds` that `causes` names."""
    for c in causes:
        if sources.get(c) in kinds:
            return c
    return None


def cancel_source_problem(
    cause: CancelCause, causes: Iterable[int], sources: Mapping[int, str]
) -> tuple[str | None, int | None]:
    """(problem, the source it uses): a non-timeout cancel names a recorded source."""
    kinds = _kinds_for(cause)
    if not kinds:
        return None, None
    used = named_source(causes, sources, kinds)
    if used is None:
        wanted = " or ".join(f"`{k}`" for k in kinds)
        return (
            f"a {cause.value} cancel names no recorded source in its causes"
            f" (a {wanted} event no other cancel or interrupt used)",
            None,
        )
    return None, used


def limit_problem(occ: str, recorded: float | None, stated: float) -> str | None:
    """A timeout states the limit the call recorded when its effect started."""
    if recorded is None:
        return f"the timeout cancels {occ}, which recorded no time limit"
    if abs(recorded - stated) > _LIMIT_EPS:
        return f"the timeout states a {stated:g} s limit, {occ} recorded {recorded:g} s"
    return None


def cancelled_end_problem(
    occ: str, outcome: EffectOutcome, committed: bool, covered: bool, stopped: bool
) -> str | None:
    """An effect's end against what cancelled it (`covered`: a timeout named
    it; `stopped`: its batch was cancelled, or an interrupt with a recorded
    source stopped it)."""
    if covered and not committed and outcome is not EffectOutcome.CANCELLED:
        return f"the timeout named {occ}, but its effect ended {outcome.value}, not cancelled"
    if outcome is EffectOutcome.CANCELLED and not (covered or stopped):
        return (
            f"{occ}'s effect ended cancelled with no cancel covering it"
            " nor an interrupt that names its source"
        )
    return None


def cancelled_result_problem(
    occ: str, outcome: EffectOutcome | None, committed: bool, status: ResultStatus
) -> str | None:
    """A call whose effect ended cancelled, uncommitted, ends with a `cancelled` result."""
    if (
        outcome is EffectOutcome.CANCELLED
        and not committed
        and status is not ResultStatus.CANCELLED
    ):
        return f"{occ}'s effect ended cancelled, but its result is {status.value}"
    return None
