"""The dispatcher contract: how admitted calls of one batch are executed.

The loop does preflight (classification, decision, asks) and hands the
*admitted* calls, in call order, to a `Dispatcher`. The dispatcher decides
only *when* each call runs (serially, or by the four-class rules of
specs/scheduler.md); what happens to one call is `execute_call`, shared by
every dispatcher, and everything observable goes through the `EffectSink`
the loop provides (which writes the trace and the journal).

Rules every dispatcher keeps:

- every call gets exactly one terminal result through the sink;
- a failing call never cancels its siblings (SCHED-5);
- once `cancel` is set, calls that have not started get `skip_call`
  (a `skipped` result) and running ones are cancelled (`execute_call`
  records `effect_end cancelled` and a `cancelled` result);
- results may be reported in completion order: the loop sends them to the
  provider in call order.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Protocol
from typing import runtime_checkable

import attrs

from metis_trace import CallClass
from metis_trace import EffectOutcome
from metis_trace import ResultStatus
from metis_trace import ToolKind

from .._errors import ToolError
from ..tools import Classification
from ..tools import FileTransaction
from ..tools import Tool
from ..tools import ToolContext


@attrs.frozen
class PlannedCall:
    """One admitted call occurrence: `occ` = "<turn>.<index>", `index` its
    position in the assistant message, `call_id` the provider's id.
    `timeout_s`: how long its effect may run before it is cancelled (a
    `timeout` cancel that covers this call only; None: no limit)."""

    occ: str
    index: int
    call_id: str
    tool: Tool
    input: Mapping[str, Any]
    classification: Classification
    timeout_s: float | None = None


@runtime_checkable
class EffectSink(Protocol):
    """What a dispatcher reports to the loop. Calls are synchronous: each one
    is written (trace line flushed, journal fsynced) before it returns."""

    def effect_start(self, occ: str) -> None:
        """The call's effect begins (journaled as admitted first)."""

    def effect_end(
        self, occ: str, outcome: EffectOutcome, committed: bool, content: str = ""
    ) -> None:
        """The effect ended. With `committed`, `content` (the output) is
        journaled before the trace records the end: a resumed process reports
        it instead of running the effect again (RETRY-1)."""

    def handshake(self, occ: str, job: str) -> None:
        """A Background call returned its job id; its work is now detached."""

    def timed_out(self, occ: str, limit_s: float) -> None:
        """The call ran past its time limit: it alone is cancelled (its
        `effect_end` and `cancelled` result follow), its siblings go on."""

    def result(self, occ: str, status: ResultStatus, content: str) -> None:
        """The occurrence's one terminal result."""


@runtime_checkable
class Dispatcher(Protocol):
    async def run_batch(
        self,
        calls: Sequence[PlannedCall],
        ctx: ToolContext,
        sink: EffectSink,
        cancel: asyncio.Event,
    ) -> None:
        """Run every call of `calls` (admitted, in call order) to its result.

        Returns when every call has its result. Must not raise for a tool's
        failure; may raise `CancelledError` when the batch itself is cancelled
        from outside (the loop then records an interrupt).
        """


_MUTATING = (ToolKind.EDIT, ToolKind.EXEC)


def _error_text(exc: Exception) -> str:
    if isinstance(exc, ToolError):
        return str(exc) or type(exc).__name__
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def skip_call(call: PlannedCall, sink: EffectSink, reason: str = "batch cancelled") -> None:
    """Close a call that never started after a cancel: a `skipped` result."""
    sink.result(call.occ, ResultStatus.SKIPPED, f"skipped: {reason}")


async def execute_call(call: PlannedCall, ctx: ToolContext, sink: EffectSink) -> None:
    """Run one admitted call from `effect_start` to its result.

    Tool exceptions become `error` results, never propagate. A Background
    call is detached through `ctx.jobs` and answered with its job id.
    `committed`: an edit that completed (a failing or cancelled edit is
    rolled back through a `FileTransaction`), or an exec whose process ran
    to an exit status (its effects cannot be taken back). Read-only calls
    never commit. On cancellation the effect ends `cancelled` (uncommitted),
    the result is `cancelled`, and `CancelledError` propagates.
    """
    occ = call.occ
    cls = call.classification
    sink.effect_start(occ)
    if cls.cls is CallClass.BACKGROUND:
        # as this call: the names its classification checked are its own
        job_ctx = attrs.evolve(ctx, call_occ=occ)
        try:
            job = ctx.jobs.start(occ, functools.partial(call.tool.run, call.input, job_ctx))
        except Exception as exc:  # a tool's failure is its result, never the loop's crash
            text = _error_text(exc)
            sink.effect_end(occ, EffectOutcome.ERROR, False)
            sink.result(occ, ResultStatus.ERROR, text)
            return
        sink.handshake(occ, job)
        sink.result(occ, ResultStatus.OK, f"started background job {job}")
        return
    kind = cls.kind
    tx = FileTransaction() if kind is ToolKind.EDIT else None
    # One copy of the context for the call (each copy resolves its paths again):
    # as this call, with its transaction, and an exit record only for an exec
    # call (RETRY-4).
    run_ctx = attrs.evolve(
        ctx,
        call_occ=occ,
        transaction=ctx.transaction if tx is None else tx,
        exit_dir=ctx.exit_dir if kind is ToolKind.EXEC else None,
    )
    limit = call.timeout_s
    budget: asyncio.Timeout | None = None
    try:
        if limit is None:
            output = await call.tool.run(call.input, run_ctx)
        else:
            async with asyncio.timeout(limit) as budget:
                output = await call.tool.run(call.input, run_ctx)
    except TimeoutError as exc:
        if limit is None or budget is None or not budget.expired():  # the tool's own
            rolled = _rollback(tx)
            sink.effect_end(occ, EffectOutcome.ERROR, False)
            sink.result(occ, ResultStatus.ERROR, _error_text(exc) + rolled)
            return
        # Its own limit, not a cancel of the batch: it alone ends cancelled.
        sink.timed_out(occ, limit)
        rolled = _rollback(tx)
        sink.effect_end(occ, EffectOutcome.CANCELLED, False)
        sink.result(
            occ, ResultStatus.CANCELLED, f"cancelled: ran past its {limit:g} s limit{rolled}"
        )
        return
    except asyncio.CancelledError:
        rolled = _rollback(tx)
        sink.effect_end(occ, EffectOutcome.CANCELLED, False)
        sink.result(occ, ResultStatus.CANCELLED, "cancelled while running" + rolled)
        raise
    except Exception as exc:  # ToolError, ToolInputError, or a buggy tool
        rolled = _rollback(tx)
        text = _error_text(exc) + rolled
        sink.effect_end(occ, EffectOutcome.ERROR, False)
        sink.result(occ, ResultStatus.ERROR, text)
        return
    content = output.content
    if output.is_error:
        content += _rollback(tx)
        committed = kind is ToolKind.EXEC
        sink.effect_end(occ, EffectOutcome.ERROR, committed, content)
        sink.result(occ, ResultStatus.ERROR, content)
        return
    if tx is not None:
        tx.commit()
    sink.effect_end(occ, EffectOutcome.OK, kind in _MUTATING, content)
    sink.result(occ, ResultStatus.OK, content)


def _rollback(tx: FileTransaction | None) -> str:
    """Undo a failed edit; a note for the result if even that failed."""
    if tx is None:
        return ""
    try:
        tx.rollback()
    except ToolError as exc:
        return f" ({exc})"
    return ""
