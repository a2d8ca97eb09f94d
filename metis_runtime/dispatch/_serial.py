"""The serial dispatcher: one call at a time, in call order.

Valid under every class rule of specs/scheduler.md (nothing ever overlaps),
so it is the reference the four-class dispatcher is compared with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..tools import ToolContext
from ._base import EffectSink
from ._base import PlannedCall
from ._base import execute_call
from ._base import skip_call


class SerialDispatcher:
    async def run_batch(
        self,
        calls: Sequence[PlannedCall],
        ctx: ToolContext,
        sink: EffectSink,
        cancel: asyncio.Event,
    ) -> None:
        waiter: asyncio.Task[bool] | None = None
        try:
            for call in calls:
                if cancel.is_set():
                    skip_call(call, sink)
                    continue
                task = asyncio.create_task(execute_call(call, ctx, sink), name=f"metis {call.occ}")
                if waiter is None:
                    waiter = asyncio.create_task(cancel.wait())
                try:
                    await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    # We are cancelled from outside: the running call ends with us.
                    task.cancel()
                    await asyncio.wait((task,))
                    raise
                if not task.done():
                    task.cancel()
                    # wait(), not await: only the call's CancelledError is expected here;
                    # one aimed at us still propagates from this await.
                    await asyncio.wait((task,))
                failure = None if task.cancelled() else task.exception()
                if failure is not None:
                    raise failure  # the sink failed (trace or journal), not the tool
        finally:
            if waiter is not None:
                waiter.cancel()
