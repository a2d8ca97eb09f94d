"""Dispatching the admitted calls of a batch.

`Dispatcher` is the contract (`run_batch(calls, ctx, sink, cancel)`),
`EffectSink` what a dispatcher reports to, `execute_call`/`skip_call` the
per-call steps every dispatcher shares, `SerialDispatcher` the one-at-a-time
reference, `FourClassDispatcher` the four-class mediation of
specs/scheduler.md (Safe concurrent, Queue FIFO per key, Exclusive a barrier,
Background a handshake). `GateLike` is the permission gate as the loop uses it;
`PassThroughGate` a minimal gate (mode fallback and scope only).
"""

from ._base import Dispatcher, EffectSink, PlannedCall, execute_call, skip_call
from ._four_class import FourClassDispatcher
from ._gate import (
    AskAnswer,
    AskAnswerLike,
    AskFunction,
    GateDecision,
    GateDecisionLike,
    GateLike,
    PassThroughGate,
)
from ._serial import SerialDispatcher

__all__ = [
    "AskAnswer",
    "AskAnswerLike",
    "AskFunction",
    "Dispatcher",
    "EffectSink",
    "FourClassDispatcher",
    "GateDecision",
    "GateDecisionLike",
    "GateLike",
    "PassThroughGate",
    "PlannedCall",
    "SerialDispatcher",
    "execute_call",
    "skip_call",
]
