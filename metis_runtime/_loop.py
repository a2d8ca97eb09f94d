"""The agent loop (specs/loop.md), recording every transition in the trace.

One iteration: `turn_start` -> context control -> `request` -> the streamed
answer (`stream_repair` per normalized defect) -> `assistant` -> batch
preflight (every call classified and decided, every ask settled, before any
effect) -> dispatch of the admitted calls -> one `result` per occurrence ->
`results_sent` in call order -> the next turn; or `run_end completed` after
an answer without calls.

The loop never lets a call go unanswered: unknown tools, malformed
arguments, refusals, exceptions, cancellation and interruption all end in a
result (or, after an interrupt, in a repair stub when the run resumes).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs

from metis_trace import NOT_JOURNALED
from metis_trace import CallClass
from metis_trace import CancelCause
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RunStatus
from metis_trace import ToolKind
from metis_trace import TraceHeader
from metis_trace import content_digest

from ._errors import JournalError
from ._errors import MetisRuntimeError
from ._errors import StreamFormatError
from ._errors import ToolError
from ._journal import Journal
from ._journal import JournalState
from ._journal import TracedCall
from ._journal import TraceScan
from ._journal import read_state_messages
from ._journal import scan_trace
from ._session import Session
from ._session import result_ids
from ._session import results_message
from ._trace import TraceWriteError
from ._trace import TraceWriter
from .dispatch import AskAnswer
from .dispatch import Dispatcher
from .dispatch import GateDecisionLike
from .dispatch import GateLike
from .dispatch import PlannedCall
from .dispatch import SerialDispatcher
from .providers import AssistantMessage
from .providers import ContextOverflowError
from .providers import Message
from .providers import MessageComplete
from .providers import ModelRequest
from .providers import Provider
from .providers import StreamEvent
from .providers import ToolSpec as WireToolSpec
from .providers import ToolUseBlock
from .tools import Classification
from .tools import ToolContext
from .tools import ToolOutput
from .tools import ToolRegistry
from .tools._derived import redact_footprint
from .tools._exits import ExitRecord
from .tools._exits import read_exit_record

DEFAULT_SYSTEM = "You are a coding agent working in the user's workspace. Use the tools."
PRODUCER = "metis_runtime"

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
# The phases in which a stop's source (`signal`, `stop_request`) is recorded:
# those of a live run (the model enables them there: specs/scheduler.md).
_LIVE = ("ready", "preparing", "streaming", "batch", "answered")
_MUTATING = (ToolKind.EDIT, ToolKind.EXEC)
_UNRUNNABLE = Classification(CallClass.EXCLUSIVE, None, ToolKind.EXEC)
_STUB = (
    "interrupted: the process running this call stopped before it finished. It was not run again."
)
_STUB_UNKNOWN = (
    "outcome unknown: the process running this call stopped after its effect started "
    "and before its outcome was recorded; the effect may have happened, in part or in "
    "full. It was not run again: check before repeating it."
)


def _record_outcome(record: ExitRecord) -> EffectOutcome:
    return EffectOutcome.ERROR if record.is_error else EffectOutcome.OK


def _recovered_text(record: ExitRecord) -> str:
    status = "unknown" if record.exit_status is None else str(record.exit_status)
    return (
        f"[the process running this call stopped after the call finished (exit status "
        f"{status}); its output below is from the call's exit record. It was not run "
        f"again.]\n{record.content}"
    )


@attrs.frozen
class LoopConfig:
    """`job_wait`: seconds to wait, after the final answer, for Background
    jobs still running before they are cancelled (None: wait for them).
    `call_timeout`: seconds a call's effect may run before it alone is
    cancelled (a `timeout` cancel naming it; None: no limit).
    `detach_jobs`: at the run's end, jobs still running are detached on
    purpose (`job_done detached` with their process group; the tool context
    must have `detach_jobs` too) instead of waited for and cancelled."""

    system: str = DEFAULT_SYSTEM
    max_turns: int = 50
    max_tokens: int = 4096
    job_wait: float | None = 300.0
    call_timeout: float | None = None
    detach_jobs: bool = False


@attrs.frozen
class RunResult:
    status: RunStatus
    turns: int
    text: str = ""  # the final answer (completed runs)
    error: str = ""  # why the run failed or stopped


class LoopObserver:
    """Progress callbacks; the defaults do nothing. Must not raise."""

    def stream_event(self, turn: int, event: StreamEvent) -> None:
        """Each normalized stream event, as it arrives."""

    def assistant(self, turn: int, message: AssistantMessage) -> None:
        """The complete answer of a turn."""

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        """An admitted call's effect begins."""

    def call_finished(
        self, occ: str, tool: str, status: ResultStatus, content: str, seconds: float | None
    ) -> None:
        """A call's terminal result (`seconds` is None when no effect ran)."""

    def job_finished(self, occ: str, job: str, outcome: EffectOutcome) -> None:
        """Detached Background work ended."""

    def note(self, text: str) -> None:
        """A line worth showing (resume, interrupt, cancel)."""

    def run_ended(self, result: RunResult) -> None:
        """The run's end."""


FollowUp = Callable[[], Awaitable[str | None]]
"""Asked after an answer without calls: a message that continues the run (a
new turn), or None to end it. A child's is its parent's queued messages."""

ContextHook = Callable[[Session, int], Awaitable[None]]
"""Context control, called in `preparing` with the session and the turn.
(Compaction is not implemented yet; a hook may only inspect the session.)"""


def make_header(
    *,
    mode: Mode,
    tools: Sequence[str],
    route: Route = Route.INTERACTIVE,
    headless_default: Decision = Decision.DENY,
    run_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
    hooks: Sequence[HookRef] = (),
) -> TraceHeader:
    """The header of a root agent's trace (`hooks`: the PreToolUse hooks in force)."""
    rid = run_id or uuid.uuid4().hex
    return TraceHeader(
        run_id=rid,
        root_run_id=rid,
        mode=mode,
        route=route,
        headless_default=headless_default,
        tools=tuple(tools),
        hooks=tuple(hooks),
        producer=PRODUCER,
        meta=dict(meta or {}),
    )


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _error_text(exc: BaseException) -> str:
    text = _one_line(str(exc))
    if isinstance(exc, MetisRuntimeError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@attrs.define
class _Occ:
    occ: str
    index: int
    call_id: str
    tool: str
    input: Mapping[str, Any]
    last: int  # seq of the latest event about this occurrence
    kind: ToolKind | None = None
    started: int | None = None
    t0: float = 0.0
    limit: float | None = None  # its time limit, recorded on its effect_start (SCHED-5)
    result: tuple[ResultStatus, str, int] | None = None


class _Batch:
    """The current batch: bookkeeping of its occurrences, and the sink the
    dispatcher reports to (writes the trace and the journal)."""

    def __init__(self, loop: AgentLoop, turn: int, assistant_seq: int) -> None:
        self.loop = loop
        self.turn = turn
        self.assistant_seq = assistant_seq
        self.occs: dict[str, _Occ] = {}
        self.cancel = asyncio.Event()
        self.cancel_recorded = False
        self.timed_out_occs: set[str] = set()  # cancelled by their own time limit

    # --- EffectSink ---------------------------------------------------------------

    def effect_start(self, occ: str) -> None:
        loop, c = self.loop, self.occs[occ]
        limit = {} if c.limit is None else {"limit_s": c.limit}
        c.started = c.last = loop._emit("effect_start", (c.last,), occ=occ, **limit)
        c.t0 = time.monotonic()
        if loop.journal is not None and c.kind in _MUTATING:
            # Write-ahead: known to have (possibly) started before it runs.
            journal = loop.journal
            self._journal(lambda: journal.admit(occ, c.call_id, c.tool, c.input))
        loop.observer.call_started(occ, c.tool, c.input)

    def effect_end(
        self, occ: str, outcome: EffectOutcome, committed: bool, content: str = ""
    ) -> None:
        loop, c = self.loop, self.occs[occ]
        if committed:
            # The trace first, then the journal's copy of the output (RETRY-2):
            # a resume answers only what the trace shows committed.
            # Its digest: of the output as the trace shows it, which every
            # later result of the call must carry (a resumed one too).
            digest = content_digest(loop.trace.shown(content))
            c.last = loop._emit("commit", (c.last,), occ=occ, outcome=outcome, digest=digest)
            if loop.journal is not None:
                journal = loop.journal
                self._journal(lambda: journal.commit(occ, outcome, content))
        ours = self.cancel_recorded or occ in self.timed_out_occs
        if outcome is EffectOutcome.CANCELLED and not ours:
            loop._interrupt("the process was stopped")  # not our cancel: an interrupt
        cause = c.started if c.started is not None else c.last
        c.last = loop._emit("effect_end", (cause,), occ=occ, outcome=outcome, committed=committed)

    def _journal(self, write: Callable[[], None]) -> None:
        """A journal write; when it fails, the trace records the sink's error
        and the batch's `sink_failure` cancel naming it (SCHED-5), then the
        error stops the batch (the dispatcher cancels what runs)."""
        try:
            write()
        except JournalError as exc:
            loop = self.loop
            if not loop.trace.closed and loop._phase == "batch":
                error = loop._emit("sink_error", (), sink="journal", error=_one_line(str(exc)))
                self.record_cancel(
                    "the journal could not be written", CancelCause.SINK_FAILURE, error
                )
            raise

    def timed_out(self, occ: str, limit_s: float) -> None:
        loop, c = self.loop, self.occs[occ]
        self.timed_out_occs.add(occ)
        c.last = loop._emit(
            "cancel",
            (c.last,),
            turn=self.turn,
            cause=CancelCause.TIMEOUT,
            occs=[occ],
            limit_s=limit_s,
            reason=f"{occ} ran past its {limit_s:g} s limit",
        )

    def handshake(self, occ: str, job: str) -> None:
        loop, c = self.loop, self.occs[occ]
        cause = c.started if c.started is not None else c.last
        c.last = loop._emit("handshake", (cause,), occ=occ, job=job)
        loop._handshakes[job] = c.last

    def result(self, occ: str, status: ResultStatus, content: str) -> None:
        loop, c = self.loop, self.occs[occ]
        if loop._interrupted:
            return  # after an interrupt only a resumed process closes calls (repair)
        seq = loop._emit(
            "result", (c.last,), occ=occ, call_id=c.call_id, status=status, content=content
        )
        c.result = (status, content, seq)
        c.last = seq
        seconds = time.monotonic() - c.t0 if c.started is not None else None
        loop.observer.call_finished(occ, c.tool, status, content, seconds)

    # --- the loop's side ----------------------------------------------------------

    def record_cancel(self, reason: str, cause: CancelCause, *sources: int) -> None:
        """The batch's cancel, naming the stop's recorded source among its
        causes (SCHED-5; `sources`: a sink's error); a cause with none
        recorded is left without one."""
        if self.cancel_recorded:
            return
        causes = (self.assistant_seq, *sources, *self.loop._take_sources())
        self.loop._emit("cancel", causes, turn=self.turn, cause=cause, reason=reason)
        self.cancel_recorded = True
        self.cancel.set()


class AgentLoop:
    """Runs one agent: `await loop.run(task)`, or `await loop.resume(state)`
    on a trace and journal left by a process that stopped.

    The trace writer, the journal and the tool context's job manager belong
    to the caller (close them after the run). `cancel(reason)` may be called
    at any time, from a callback or a signal handler on the loop's thread.
    """

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry,
        gate: GateLike[Any],
        ctx: ToolContext,
        trace: TraceWriter,
        *,
        journal: Journal | None = None,
        dispatcher: Dispatcher | None = None,
        observer: LoopObserver | None = None,
        config: LoopConfig | None = None,
        context_hook: ContextHook | None = None,
        overflow_hook: ContextHook | None = None,
        follow_up: FollowUp | None = None,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.gate = gate
        hides = getattr(gate, "hides", None)  # the search tools hide what a Read may not open
        if ctx.hidden is None and callable(hides):
            ctx = attrs.evolve(ctx, hidden=hides)
        self.ctx = ctx
        self.trace = trace
        self.journal = journal
        self.dispatcher: Dispatcher = dispatcher if dispatcher is not None else SerialDispatcher()
        self.observer = observer if observer is not None else LoopObserver()
        self.config = config if config is not None else LoopConfig()
        self.context_hook = context_hook
        # Called once per turn when the provider refuses the request as too
        # long: it cuts the context (recording a `compaction` with step
        # `retry`), and the request is sent again; a second refusal fails the run.
        self.overflow_hook = overflow_hook
        self.follow_up = follow_up
        self.session = Session()
        self._by_name = {t.name: t for t in tools}
        self._specs = tuple(
            WireToolSpec(s.name, s.description, s.input_schema) for s in tools.specs()
        )
        self._turn = 0
        self._prev: tuple[int, ...] = ()  # what the next turn_start depends on
        self._phase = "ready"
        self._batch: _Batch | None = None
        self._hold = 0  # > 0 while an ask is pending: nothing may come between
        self._held: list[Callable[[], None]] = []
        self._handshakes: dict[str, int] = {}
        self._notes: list[str] = []
        self._cancel_reason: str | None = None
        self._cancelled = asyncio.Event()
        self._interrupted = False
        # The recorded sources of a stop (`signal`, `stop_request` seqs) that
        # no cancel or interrupt has named yet; `_stop_asked`: one is on its way.
        self._sources: list[int] = []
        self._stop_asked = False
        ctx.jobs.on_done(self._on_job_done)

    # --- trace plumbing -----------------------------------------------------------

    def _emit(self, kind: str, causes: tuple[int, ...], **fields: Any) -> int:
        return self.trace.emit(kind, causes, **fields)

    def _last(self) -> tuple[int, ...]:
        n = self.trace.next_seq
        return (n - 1,) if n else ()

    def _take_sources(self) -> tuple[int, ...]:
        taken, self._sources = tuple(self._sources), []
        return taken

    def _record_source(self, kind: str, **fields: Any) -> None:
        self._stop_asked = True

        def record() -> None:
            if self._phase in _LIVE and not self.trace.closed:
                self._sources.append(self._emit(kind, (), **fields))

        self._defer(record)

    def signal_received(self, signum: int) -> None:
        """Record that the process received `signum` (SIGINT, SIGTERM): the
        source the cancel or interrupt it causes names (SCHED-5). Call it from
        the signal's handler, on the loop's thread, before stopping the run."""
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = ""
        # The receiving process, for the witness's deliveries (TRACE-4).
        self._record_source("signal", signum=signum, name=name, pid=os.getpid())

    def stop_requested(self, via: str, reason: str = "") -> None:
        """Record that someone asked the run to stop through an API (`via`),
        before the run is stopped (`cancel`, or its task cancelled)."""
        self._record_source("stop_request", via=via, reason=reason)

    def _interrupt(self, reason: str) -> None:
        if self._phase in ("interrupted", "resumed", "ended"):
            return
        # The interrupt names the stop's recorded source, if any (SCHED-5).
        causes = tuple(sorted({*self._last(), *self._take_sources()}))
        self._emit("interrupt", causes, reason=reason)
        self._phase = "interrupted"
        self._interrupted = True
        self.observer.note(f"interrupted: {reason}")

    def _defer(self, action: Callable[[], None]) -> None:
        if self._hold:
            self._held.append(action)
        else:
            action()

    def _on_job_done(self, occ: str, job: str, outcome: EffectOutcome, output: ToolOutput) -> None:
        handshake = self._handshakes.pop(job, None)
        if handshake is None or self.trace.closed or self._phase == "ended":
            return  # not ours, or after the end (a run never ends with a job running)

        pid = self.ctx.jobs.detached_pid(job)
        detached = {"pid": pid} if pid is not None else {}

        def record() -> None:
            self._emit("job_done", (handshake,), occ=occ, job=job, outcome=outcome, **detached)
            self._notes.append(
                f"[background job {job} of call {occ} ended: {outcome.value}]\n{output.content}"
            )
            self.observer.job_finished(occ, job, outcome)

        self._defer(record)

    def cancel(self, reason: str = "cancelled", cause: CancelCause = CancelCause.USER) -> None:
        """Stop the run: a running batch is cancelled (started calls are
        cancelled, the rest skipped), its results are sent, and the run ends
        `cancelled`; outside a batch the run ends at the next step. `cause`
        is recorded on the batch's `cancel` (SCHED-5)."""
        if self._cancel_reason is not None or self._phase in ("ended", "interrupted"):
            return
        if not self._stop_asked:  # this call is the API request that stops the run
            self.stop_requested("AgentLoop.cancel", reason)
        self._cancel_reason = reason
        self._cancelled.set()
        batch = self._batch
        if batch is not None and self._phase == "batch":
            self._defer(lambda: batch.record_cancel(reason, cause))

    # --- running ------------------------------------------------------------------

    async def run(self, task: str) -> RunResult:
        """Run `task` until an answer without calls, a failure, or max turns."""
        message = Message.user(task)
        if self.journal is not None:
            self.journal.message(0, "task", message)
        self.session.append(message)
        return await self._drive()

    async def _drive(self) -> RunResult:
        try:
            return await self._iterate()
        except asyncio.CancelledError:
            # Cancelled from outside (Ctrl-C): record the interrupt and leave the
            # run resumable; running effects have recorded their end already.
            # What an unanswered ask held back (a stop's source) goes first.
            self._flush_held()
            self._interrupt("the process was stopped")
            raise
        except (TraceWriteError, JournalError):
            raise  # nothing more can be recorded
        except Exception as exc:  # a provider or runtime failure ends the run, closed
            return await self._fail(exc)

    async def _fail(self, exc: BaseException) -> RunResult:
        error = _error_text(exc)
        if self.trace.closed:
            raise exc
        open_calls = self._batch is not None and any(
            c.result is None for c in self._batch.occs.values()
        )
        if self._phase in ("preparing", "streaming", "batch"):
            self._interrupt(error)
        # An open call cannot be closed by a failed run (CLOSE-2): it stays for repair.
        status = RunStatus.INTERRUPTED if open_calls else RunStatus.FAILED
        return await self._end(status, self._last(), error=error)

    async def _end(
        self, status: RunStatus, causes: tuple[int, ...], *, text: str = "", error: str = ""
    ) -> RunResult:
        # Every job reports job_done before the end (SCHED-4); cancelled or
        # detached ones too.
        if self.config.detach_jobs and status is RunStatus.COMPLETED:
            await self.ctx.jobs.detach_all()
        await self.ctx.jobs.cancel_all()
        self._flush_held()
        if self.journal is not None:
            self.journal.end(status.value)
        self._emit("run_end", causes, status=status)
        self._phase = "ended"
        result = RunResult(status, self._turn, text, error)
        self.observer.run_ended(result)
        return result

    def _flush_held(self) -> None:
        held, self._held = self._held, []
        for action in held:
            action()

    async def _iterate(self) -> RunResult:
        config = self.config
        while True:
            if self._cancel_reason is not None:
                return await self._end(RunStatus.CANCELLED, self._prev, error=self._cancel_reason)
            if self._turn >= config.max_turns:
                return await self._end(
                    RunStatus.FAILED,
                    self._prev,
                    error=f"stopped at the limit of {config.max_turns} turns",
                )
            self._turn += 1
            turn = self._turn
            start = self._emit("turn_start", self._prev, turn=turn)
            self._phase = "preparing"
            if self.context_hook is not None:
                await self.context_hook(self.session, turn)
            request = self._emit("request", (start,), turn=turn)
            self._phase = "streaming"
            try:
                message = await self._stream(turn)
            except ContextOverflowError:
                if self.overflow_hook is None:
                    raise
                await self.overflow_hook(self.session, turn)
                self._phase = "preparing"
                request = self._emit("request", self._last(), turn=turn)
                self._phase = "streaming"
                message = await self._stream(turn)
            if message is None:  # cancelled while streaming
                reason = self._cancel_reason or "cancelled"
                self._interrupt(reason)
                return await self._end(RunStatus.CANCELLED, self._last(), error=reason)
            repairs = tuple(
                self._emit(
                    "stream_repair", (request,), turn=turn, problem=n.problem, repair=n.repair
                )
                for n in message.repairs
            )
            as_message = message.to_message()
            if self.journal is not None:
                self.journal.message(turn, "assistant", as_message)
            uses = message.tool_uses
            calls = [
                {"occ": f"{turn}.{i}", "call_id": b.id, "tool": b.name, "input": b.input}
                for i, b in enumerate(uses)
            ]
            assistant = self._emit(
                "assistant",
                (request, *repairs),
                turn=turn,
                message_id=message.message_id,
                calls=calls,
                stop_reason=message.stop_reason,
            )
            self.session.append(as_message)
            self.observer.assistant(turn, message)
            if not uses:
                self._phase = "answered"
                more = await self.follow_up() if self.follow_up is not None else None
                if more:  # the answer is not the end: the message starts the next turn
                    follow = Message.user(more)
                    if self.journal is not None:
                        self.journal.message(turn + 1, "follow_up", follow)
                    self.session.append(follow)
                    self._prev = (assistant,)
                    self.observer.note(f"follow-up after turn {turn}: a new turn")
                    continue
                if self.ctx.jobs.running and not config.detach_jobs:
                    await self.ctx.jobs.wait_all(config.job_wait)
                return await self._end(RunStatus.COMPLETED, (assistant,), text=message.text)
            self._phase = "batch"
            await self._run_batch(turn, assistant, uses)

    async def _stream(self, turn: int) -> AssistantMessage | None:
        """The turn's complete answer; None if the run was cancelled meanwhile."""
        if self._cancel_reason is not None:
            return None
        request = self.session.request(self.config.system, self._specs, self.config.max_tokens)
        task = asyncio.ensure_future(self._consume(turn, request))
        stop = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait((task, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            stop.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))
            return None
        return task.result()

    async def _consume(self, turn: int, request: ModelRequest) -> AssistantMessage:
        provider, observer = self.provider, self.observer
        message: AssistantMessage | None = None
        async for event in provider.stream(request):
            observer.stream_event(turn, event)
            if isinstance(event, MessageComplete):
                message = event.message
        if message is None:
            raise StreamFormatError(f"{provider.name}: stream ended without a complete message")
        return message

    # --- one batch ----------------------------------------------------------------

    async def _run_batch(self, turn: int, assistant: int, uses: Sequence[ToolUseBlock]) -> None:
        batch = _Batch(self, turn, assistant)
        self._batch = batch
        for index, block in enumerate(uses):
            occ = f"{turn}.{index}"
            batch.occs[occ] = _Occ(occ, index, block.id, block.name, block.input, assistant)
        planned: list[PlannedCall] = []
        for index, block in enumerate(uses):
            occ = f"{turn}.{index}"
            if batch.cancel.is_set():
                batch.result(occ, ResultStatus.SKIPPED, "skipped: batch cancelled")
                continue
            call = await self._preflight(batch, batch.occs[occ], block)
            if call is not None:
                planned.append(call)
        if planned:
            await self.dispatcher.run_batch(planned, self.ctx, batch, batch.cancel)
        for c in batch.occs.values():
            if c.result is None and not self._interrupted:
                # A dispatcher that lost a call: close it rather than leave it open.
                if c.started is not None and c.last == c.started:
                    batch.effect_end(c.occ, EffectOutcome.ERROR, False)
                batch.result(c.occ, ResultStatus.ERROR, "error: the dispatcher lost this call")
        if self._interrupted:
            raise MetisRuntimeError("the batch was interrupted")
        ordered = sorted(batch.occs.values(), key=lambda o: o.index)
        results = []
        seqs = []
        for c in ordered:
            assert c.result is not None
            status, content, seq = c.result
            results.append((c.call_id, content or "(no output)", status is not ResultStatus.OK))
            seqs.append(seq)
        notes, self._notes = self._notes, []
        message = results_message(results, notes)
        if self.journal is not None:
            self.journal.message(turn, "results", message)
        sent = self._emit(
            "results_sent",
            tuple(seqs),
            turn=turn,
            occs=[c.occ for c in ordered],
            call_ids=result_ids(message),  # what the message holds, not our bookkeeping
        )
        self.session.append(message)
        self._batch = None
        self._phase = "ready"
        self._prev = (sent,)

    async def _preflight(self, batch: _Batch, c: _Occ, block: ToolUseBlock) -> PlannedCall | None:
        """Classify and decide one call, settle its ask; the call if admitted."""
        tool = self._by_name.get(block.name)
        invalid: str | None = None
        classification: Classification | None = None
        if block.input_error is not None:
            invalid = f"{block.name}: the arguments are not a JSON object ({block.input_error})"
        elif tool is None:
            invalid = f"unknown tool '{block.name}' (available: {', '.join(self._by_name)})"
        else:
            try:
                # as this call: the names it checks are its own (`tools/_files.py`)
                classification = tool.classify(block.input, attrs.evolve(self.ctx, call_occ=c.occ))
            except ToolError as exc:
                invalid = _one_line(str(exc))
            except Exception as exc:  # a buggy classifier refuses its call, not the run
                invalid = f"{block.name}: cannot classify the call: {_error_text(exc)}"
        if classification is not None:  # the footprint as the trace may hold it (TRACE-2)
            classification = redact_footprint(classification, block.input)
        # What cannot run is decided as the most dangerous kind, then answered with an error.
        shown = classification or _UNRUNNABLE
        try:
            decision: GateDecisionLike = self.gate.decide(
                block.name, block.input, shown.kind, shown.paths, shown.command
            )
        except OSError as exc:
            # The gate could not resolve a path the call names (a symlink being
            # swapped under it): the call is refused, not the run.
            invalid = f"{block.name}: cannot decide the call: {_error_text(exc)}"
            shown = _UNRUNNABLE
            decision = self.gate.decide(
                block.name, block.input, shown.kind, shown.paths, shown.command
            )
        cls, key = shown.cls, shown.key
        reads, writes = shown.footprint()
        c.kind = decision.facts.kind
        # The hooks the gate ran on this call, in order, before its decision (CHILD-6).
        for hook_id, vetoed, reason in getattr(decision, "hooks", ()):
            c.last = self._emit(
                "hook", (c.last,), occ=c.occ, hook=hook_id, vetoed=vetoed, reason=reason
            )
        c.last = self._emit(
            "decision",
            (c.last,),
            occ=c.occ,
            decision=decision.decision,
            stage=str(decision.stage),
            rule=decision.rule,
            facts=decision.facts,
            route=decision.route,
            cls=cls,
            key=key,
            reads=[str(p) for p in reads],
            writes=[str(p) for p in writes],
        )
        admitted = decision.decision is Decision.ALLOW
        if decision.decision is Decision.ASK:
            self._hold += 1
            try:
                if invalid is None:
                    answer = await self.gate.resolve_ask(c.occ, block.name, block.input, decision)
                elif decision.route in _WAITLESS:
                    default = self.trace.header.headless_default is Decision.ALLOW
                    answer = AskAnswer(default, "headless-default")
                else:
                    # Nobody is asked about a call that cannot run.
                    answer = AskAnswer(False, "policy")
                c.last = self._emit(
                    "ask_resolved",
                    (c.last,),
                    occ=c.occ,
                    approved=answer.approved,
                    resolver=answer.resolver,
                )
            finally:
                self._hold -= 1
            self._flush_held()
            admitted = answer.approved
        if invalid is not None:
            batch.result(c.occ, ResultStatus.ERROR, f"error: {invalid}")
            return None
        if not admitted:
            why = f"stage {decision.stage}"
            if decision.rule is not None:
                why += f", rule {decision.rule.pattern}"
            if decision.decision is Decision.ASK:
                why = "the ask was rejected"
            batch.result(c.occ, ResultStatus.DENIED, f"permission denied: {block.name} ({why})")
            return None
        assert tool is not None and classification is not None
        # The gate may see a stronger kind than the tool did (bash); journal by that one.
        c.kind = decision.facts.kind
        c.limit = None if classification.cls is CallClass.BACKGROUND else self.config.call_timeout
        return PlannedCall(c.occ, c.index, c.call_id, tool, block.input, classification, c.limit)

    # --- resuming -----------------------------------------------------------------

    async def resume(self, state: JournalState, scan: TraceScan | None = None) -> RunResult:
        """Continue a run whose process stopped, from its trace and journal.

        Appends, as the model requires: `interrupt` (unless the trace has
        one), `job_done cancelled` for Background jobs that lost their
        process, `effect_end committed` for effects the trace shows committed
        without an end, `resume`, an ok/error `result` (the journaled output)
        per committed effect without one, and `repair` stubbing every other
        open occurrence, `unknown` where the effect started and may have
        happened (it is not Safe), `interrupted` otherwise: nothing is re-run
        (RETRY-1..3). A run that had answered just ends `completed`.
        """
        if scan is None:
            scan = scan_trace(self.trace.events)
        if scan.phase == "ended":
            raise MetisRuntimeError(f"the run already ended ({scan.status}); nothing to resume")
        if state.run_id != self.trace.header.run_id:
            raise MetisRuntimeError(
                f"the journal is of run {state.run_id}, the trace of run {self.trace.header.run_id}"
            )
        history, batch_results = read_state_messages(state, scan)
        self.session = Session(history)
        self._turn = scan.turn
        self.observer.note(f"resuming run {state.run_id} after turn {scan.turn}")
        try:
            return await self._recover(state, scan, batch_results)
        except asyncio.CancelledError:
            self._interrupt("the process was stopped")
            raise

    def _lose_jobs(self, jobs: Sequence[tuple[str, tuple[str, int]]]) -> None:
        # Their process is gone: they end cancelled, and the model is told so.
        for job, (occ, handshake) in jobs:
            self._emit("job_done", (handshake,), occ=occ, job=job, outcome=EffectOutcome.CANCELLED)
            self._notes.append(
                f"[background job {job} of call {occ} was lost when the process stopped]"
            )

    def _exit_record(self, c: TracedCall) -> ExitRecord | None:
        """The exit record a started exec call left, if its process finished."""
        folder = self.ctx.exit_dir
        if folder is None or c.cls is CallClass.SAFE or c.cls is CallClass.BACKGROUND:
            return None
        return read_exit_record(folder, c.occ)

    async def _recover(
        self, state: JournalState, scan: TraceScan, batch_results: Message | None
    ) -> RunResult:
        lost_jobs = sorted(scan.jobs.items(), key=lambda kv: kv[1][1])
        recovered: dict[str, ExitRecord] = {}  # answered from their exit record (RETRY-4)
        if scan.phase == "answered":
            self._lose_jobs(lost_jobs)
            last = self.session.messages[-1] if self.session.messages else None
            text = "".join(
                getattr(b, "text", "") for b in (last.content if last is not None else ())
            )
            self._phase = "answered"
            return await self._end(RunStatus.COMPLETED, self._last(), text=text)
        self._phase = scan.phase
        if scan.phase == "resumed":
            # The process that wrote `resume` reported its predecessor's jobs lost
            # before it, and started none: nothing is outstanding.
            resumed = scan.resume_seq if scan.resume_seq is not None else scan.last_seq
        else:
            if scan.phase != "interrupted":
                self._interrupt("the process stopped before the run ended")
            interrupt = scan.interrupt_seq
            if interrupt is None:
                interrupt = self.trace.next_seq - 1
            self._lose_jobs(lost_jobs)
            for c in scan.calls:
                if c.started is None or c.ended is not None:
                    continue
                record = None if c.committed else self._exit_record(c)
                if record is not None:
                    # Its process finished before the stop: commit it from its record.
                    c.committed, c.outcome = True, _record_outcome(record)
                    recovered[c.occ] = record
                    c.last = self._emit(
                        "commit", (c.last,), occ=c.occ, outcome=c.outcome, recovered=True
                    )
                    if self.journal is not None:
                        self.journal.commit(c.occ, c.outcome, _recovered_text(record))
                # Its process is gone: committed (the trace says so), or unknown.
                outcome = (c.outcome or EffectOutcome.OK) if c.committed else EffectOutcome.UNKNOWN
                c.ended = self._emit(
                    "effect_end", (c.last,), occ=c.occ, outcome=outcome, committed=c.committed
                )
            resumed = self._emit("resume", (interrupt,))
        self._phase = "resumed"
        reported: list[int] = []
        # Answered: the calls whose commit the trace holds (RETRY-2).
        for c in scan.calls:
            if c.result is None and c.committed:
                journaled = state.commits.get(c.occ)
                outcome = c.outcome or EffectOutcome.OK
                content = journaled[1] if journaled is not None else NOT_JOURNALED
                if c.occ in recovered:
                    content = _recovered_text(recovered[c.occ])
                status = ResultStatus.OK if outcome is EffectOutcome.OK else ResultStatus.ERROR
                cause = c.ended if c.ended is not None else c.last
                reported.append(
                    self._emit(
                        "result",
                        (cause,),
                        occ=c.occ,
                        call_id=c.call_id,
                        status=status,
                        content=content,
                    )
                )
                c.result = (status, content)
                how = (
                    "finished before the stop"
                    if c.occ in recovered
                    else "committed before the stop"
                )
                self.observer.note(f"{c.occ} {c.tool}: {how}; not run again")
        stubbed = [c.occ for c in scan.calls if c.result is None]
        # RETRY-3: started, and not Safe: its effect may have happened.
        unknown = [
            c.occ
            for c in scan.calls
            if c.result is None and c.started is not None and c.cls is not CallClass.SAFE
        ]
        sent: list[str] = []
        if scan.batch_turn is not None:
            if batch_results is None:
                rows = []
                for c in scan.calls:
                    if c.result is not None:
                        status, content = c.result
                        rows.append(
                            (c.call_id, content or "(no output)", status is not ResultStatus.OK)
                        )
                    else:
                        stub = _STUB_UNKNOWN if c.occ in unknown else _STUB
                        rows.append((c.call_id, stub, True))
                batch_results = results_message(rows)
                if self.journal is not None:
                    self.journal.message(scan.batch_turn, "results", batch_results)
            self.session.append(batch_results)
            sent = result_ids(batch_results)
        repair = self._emit(
            "repair",
            (resumed, *reported),
            stubbed=stubbed,
            unknown=unknown,
            call_ids=sent,
            recovered=[c.occ for c in scan.calls if c.occ in recovered],
        )
        if stubbed:
            told = [f"{o} ({'outcome unknown' if o in unknown else 'not run'})" for o in stubbed]
            self.observer.note(f"repaired: {', '.join(told)}")
        self._phase = "ready"
        self._interrupted = False
        self._prev = (repair,)
        return await self._drive()
