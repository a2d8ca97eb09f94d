"""Dispatching the admitted calls of a batch.

`Dispatcher` is the contract (`run_batch(calls, ctx, sink, cancel)`),
`EffectSink` what a dispatcher reports to, `execute_call`/`skip_call` the
per-call steps every dispatcher shares, `SerialDispatcher` the one-at-a-time
reference, `FourClassDispatcher` the four-class mediation of
specs/scheduler.md (Safe concurrent, Queue FIFO per key, Exclusive a barrier,
Background a handshake). `GateLike` is the permission gate as the loop uses it;
`PassThroughGate` a minimal gate (mode fallback and scope only); its
`GateDecision` and `AskAnswer` are the production gate's own values.
"""

from ..permissions._decision import AskAnswer
from ..permissions._decision import GateDecision
from ._base import Dispatcher
from ._base import EffectSink
from ._base import PlannedCall
from ._base import execute_call
from ._base import skip_call
from ._four_class import FourClassDispatcher
from ._gate import AskAnswerLike
from ._gate import AskFunction
from ._gate import GateDecisionLike
from ._gate import GateLike
from ._gate import PassThroughGate
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
