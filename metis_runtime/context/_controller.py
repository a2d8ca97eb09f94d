"""`ContextController`: the escalating ladder the loop runs before each request.

Contract with the loop (`AgentLoop(context_hook=controller.hook(trace))`):
the hook is awaited in `preparing`, right after `turn_start`; it may replace
`session.messages` and records one `compaction` event per step taken (with
`step`, the turn, and the occurrences removed, calls and results alike).
Steps never run with a call open: the loop calls the hook between batches.

Without the loop, `await controller.prepare(messages)` returns the prepared
messages and the steps taken. After a `ContextOverflowError`, `retry` folds
everything but the last turn; `OverflowRetryProvider` does that once per
request (see its docstring for what the trace then needs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from .._errors import ConfigError
from .._session import Session
from .._session import message_shapes
from .._trace import TraceWriter
from ..providers import ContextOverflowError
from ..providers import Message
from ..providers import ModelRequest
from ..providers import Provider
from ..providers import StreamEvent
from ..providers import TextBlock
from ..providers import complete
from ._estimate import estimate_tokens
from ._steps import StepOutput
from ._steps import digest
from ._steps import fold
from ._steps import fold_point
from ._steps import offload
from ._steps import prune
from ._steps import snip
from ._steps import transcript_problem

STEP_NAMES: tuple[str, ...] = ("prune", "snip", "offload", "collapse", "compaction", "retry")

Summarizer = Callable[[Sequence[Message]], Awaitable[str]]
"""Writes a summary of a folded prefix (which ends with a user message)."""

OccNamer = Callable[[int, int], str]
"""(message index, call index) -> the occurrence name of that call."""


@frozen
class ContextBudget:
    """Token triggers of each step (estimated tokens; see `_estimate`).

    A step runs when the estimate, after the steps below it, exceeds its
    trigger. `recent`: trailing messages prune and snip leave alone;
    collapse keeps `2 * recent`, compaction `recent`. `snip_chars`: what a
    snipped result keeps. `offload_chars`: results longer than this are
    spilled to a file (only when the controller has an `offload_dir`).
    """

    window: int = 200_000
    prune_at: int = 100_000
    snip_at: int = 120_000
    offload_at: int = 140_000
    collapse_at: int = 160_000
    compaction_at: int = 180_000
    recent: int = 4
    snip_chars: int = 2_000
    offload_chars: int = 20_000

    @classmethod
    def for_window(cls, window: int, **overrides: int) -> ContextBudget:
        """Triggers at 50/60/70/80/90 % of `window`."""
        if window <= 0:
            raise ConfigError(f"context window: must be positive, not {window}")
        base = {
            "window": window,
            "prune_at": window // 2,
            "snip_at": window * 6 // 10,
            "offload_at": window * 7 // 10,
            "collapse_at": window * 8 // 10,
            "compaction_at": window * 9 // 10,
        }
        return cls(**{**base, **overrides})

    def trigger(self, step: str) -> int:
        return int(getattr(self, f"{step}_at"))


@frozen
class StepTaken:
    """One step of the ladder, as recorded in the trace."""

    step: str
    calls_removed: tuple[str, ...]
    results_removed: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    detail: str = ""
    # The transcript the step left, as the trace records it (CLOSE-8).
    messages: tuple[dict[str, Any], ...] = ()


@frozen
class Prepared:
    messages: tuple[Message, ...]
    steps: tuple[StepTaken, ...]


_SUMMARY_SYSTEM = (
    "You compress the history of a coding agent's session. Write a short summary "
    "of what was asked, what was done (files, commands, results), what failed, "
    "and what remains to do. Plain text, no preamble."
)
_SUMMARY_ASK = "Summarize the conversation above for your own later use."


def provider_summarizer(provider: Provider, max_tokens: int = 1024) -> Summarizer:
    """A summarizer that asks `provider` (the run's own, typically)."""

    async def summarize(prefix: Sequence[Message]) -> str:
        last = prefix[-1]
        # The ask joins the last (user) message after its results: roles keep alternating.
        asked = Message("user", (*last.content, TextBlock(_SUMMARY_ASK)))
        request = ModelRequest(_SUMMARY_SYSTEM, (*prefix[:-1], asked), (), max_tokens)
        return (await complete(provider, request)).text

    return summarize


class ContextController:
    """The ladder for one run's conversation.

    `summarizer` writes the compaction summaries (without one, compaction
    and retry use the mechanical digest of collapse). `offload_dir`: where
    offload spills results (None: offload is skipped). Occurrence names
    follow the loop's `<turn>.<index>`: the controller counts the assistant
    turns it folded away, so the k-th assistant message left is turn
    `folded + k`; pass `occ_of` to name them otherwise.
    """

    def __init__(
        self,
        budget: ContextBudget | None = None,
        *,
        summarizer: Summarizer | None = None,
        offload_dir: str | Path | None = None,
        occ_of: OccNamer | None = None,
    ) -> None:
        self.budget = budget if budget is not None else ContextBudget()
        self.summarizer = summarizer
        self.offload_dir = Path(offload_dir) if offload_dir is not None else None
        self._occ_of = occ_of
        self.folded_turns = 0

    # --- naming ----------------------------------------------------------------

    def _namer(self, messages: Sequence[Message]) -> OccNamer:
        if self._occ_of is not None:
            return self._occ_of
        turn_of: dict[int, int] = {}
        n = self.folded_turns
        for i, m in enumerate(messages):
            if m.role == "assistant":
                n += 1
                turn_of[i] = n
        return lambda i, j: f"{turn_of[i]}.{j}"

    def _record(
        self, step: str, before: Sequence[Message], out: StepOutput, tokens_before: int
    ) -> StepTaken:
        name = self._namer(before)
        return StepTaken(
            step=step,
            calls_removed=tuple(name(i, j) for i, j in out.calls_removed),
            results_removed=tuple(name(i, j) for i, j in out.results_removed),
            tokens_before=tokens_before,
            tokens_after=estimate_tokens(out.messages),
            detail=out.detail,
            messages=tuple(message_shapes(out.messages)),
        )

    # --- the steps --------------------------------------------------------------

    async def _summary(self, messages: Sequence[Message], k: int) -> tuple[str, str]:
        base = digest(messages, k)
        if self.summarizer is None:
            return base, "mechanical digest (no summarizer)"
        try:
            text = (await self.summarizer(messages[:k])).strip()
        except Exception as exc:  # a failed summary must not fail the run: fall back
            return base, f"summarizer failed ({type(exc).__name__}); mechanical digest"
        if not text:
            return base, "empty summary; mechanical digest"
        task = base.split("\n\n[", 1)[0]
        return f"{task}\n\n[Summary of {k} earlier message(s):]\n{text}", "provider summary"

    async def _run(self, step: str, messages: tuple[Message, ...], b: ContextBudget) -> StepOutput:
        if step == "prune":
            return prune(messages, b.recent)
        if step == "snip":
            return snip(messages, b.recent, b.snip_chars)
        if step == "offload":
            if self.offload_dir is None:
                return StepOutput(messages, False)
            return offload(messages, b.offload_chars, self.offload_dir)
        keep = {"collapse": 2 * b.recent, "compaction": b.recent, "retry": 1}[step]
        k = fold_point(messages, keep)
        if k is None:
            return StepOutput(messages, False)
        if step == "collapse":
            summary, how = digest(messages, k), "mechanical digest"
        else:
            summary, how = await self._summary(messages, k)
        out = fold(messages, k, summary)
        return attrs.evolve(out, detail=f"{out.detail}; {how}")

    async def _apply(
        self,
        step: str,
        messages: tuple[Message, ...],
        taken: list[StepTaken],
        budget: ContextBudget,
    ) -> tuple[Message, ...]:
        before = estimate_tokens(messages)
        out = await self._run(step, messages, budget)
        if not out.taken:
            return messages
        problem = transcript_problem(out.messages)
        if problem is not None and transcript_problem(messages) is None:
            # Never hand the provider an invalid transcript (CLOSE-8): skip the step.
            return messages
        taken.append(self._record(step, messages, out, before))
        self.folded_turns += _assistants(messages) - _assistants(out.messages)
        return out.messages

    async def prepare(
        self, messages: Sequence[Message], budget: ContextBudget | None = None
    ) -> Prepared:
        """Climb the ladder: each step runs if the estimate still exceeds its
        trigger. `budget` overrides the controller's for this call."""
        b = budget if budget is not None else self.budget
        current = tuple(messages)
        taken: list[StepTaken] = []
        for step in STEP_NAMES[:-1]:
            if estimate_tokens(current) > b.trigger(step):
                current = await self._apply(step, current, taken, b)
        return Prepared(current, tuple(taken))

    async def retry(self, messages: Sequence[Message]) -> Prepared:
        """After an overflow: fold everything before the last assistant turn."""
        taken: list[StepTaken] = []
        current = await self._apply("retry", tuple(messages), taken, self.budget)
        return Prepared(current, tuple(taken))

    # --- plugging into the loop -----------------------------------------------------

    def hook(self, trace: TraceWriter) -> Callable[[Session, int], Awaitable[None]]:
        """A `context_hook` for `AgentLoop`: prepares the session in place and
        records each step as a `compaction` event caused by the one before."""

        async def context_hook(session: Session, turn: int) -> None:
            prepared = await self.prepare(session.messages)
            if not prepared.steps:
                return
            session.messages[:] = list(prepared.messages)
            for s in prepared.steps:
                record_step(trace, turn, s)

        return context_hook

    def retry_hook(self, trace: TraceWriter) -> Callable[[Session, int], Awaitable[None]]:
        """An `overflow_hook` for `AgentLoop`: after the provider refused the
        request as too long, fold the session once more and record the cut as
        a `compaction` with step `retry` (the loop then sends the request again).
        When nothing can be folded it raises `ContextOverflowError`: the run fails."""

        async def overflow_hook(session: Session, turn: int) -> None:
            prepared = await self.retry(session.messages)
            if not prepared.steps:
                # Nothing before the last turn to fold: the same request would be
                # refused again, and a request with no cut recorded is not enabled
                # while streaming (LOOP-1). The overflow fails the run.
                raise ContextOverflowError(
                    f"turn {turn}: the provider refused the request as too long, "
                    "and the context cannot be cut further"
                )
            session.messages[:] = list(prepared.messages)
            for s in prepared.steps:
                record_step(trace, turn, s)

        return overflow_hook


def record_step(trace: TraceWriter, turn: int, step: StepTaken) -> int:
    """Write one `compaction` event; its cause is the event before it."""
    n = trace.next_seq
    return trace.emit(
        "compaction",
        (n - 1,) if n else (),
        turn=turn,
        calls_removed=list(step.calls_removed),
        results_removed=list(step.results_removed),
        step=step.step,
        messages=list(step.messages),
    )


def _assistants(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages if m.role == "assistant")


class OverflowRetryProvider:
    """Wraps a provider: when a request fails with `ContextOverflowError`
    before any event, the controller's `retry` folds the request's messages
    and the request is sent once more (a second overflow propagates).

    `on_retry(step, messages)` receives the step and the folded messages, so
    the caller can record it and replace its session. The loop emits
    `request` before streaming, so a `compaction` recorded here would come
    after `request`, where specs/loop.md does not enable it; the loop must
    either emit `request` once the stream starts or record the retry itself.
    """

    def __init__(
        self,
        inner: Provider,
        controller: ContextController,
        on_retry: Callable[[StepTaken, tuple[Message, ...]], None] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.controller = controller
        self.on_retry = on_retry
        self.retries = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        started = False
        try:
            async for event in self.inner.stream(request):
                started = True
                yield event
            return
        except ContextOverflowError:
            if started:
                raise
        prepared = await self.controller.retry(request.messages)
        if not prepared.steps:
            raise ContextOverflowError(f"{self.name}: context overflow and nothing left to fold")
        self.retries += 1
        if self.on_retry is not None:
            self.on_retry(prepared.steps[0], prepared.messages)
        async for event in self.inner.stream(
            dataclasses.replace(request, messages=prepared.messages)
        ):
            yield event
