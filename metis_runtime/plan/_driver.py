"""One segment of a plan turn, run through the agent loop itself.

The plan plays the provider's part (`PlanDriver.stream`): each "answer" is
the next batch of steps as tool calls, so every step goes through the loop's
preflight (the same gate), the four-class dispatcher and the trace writer;
the last answer is the turn's final text (no calls), and the loop ends
`completed` (a trace of a plan segment is an ordinary metis trace, with
`meta.plan` in its header). The results come back through the loop observer
and the trace (decisions, approvals, commits), and become the turn log's
step records.

Before a batch is handed out, each step is resolved (`_rules.resolve`):
a false condition or an empty collection consumed by a mutation skips it;
missing filler values pause the turn (`needs_inputs`); and the gate is asked
about each call (`decide` only): a call it would ask about pauses the turn
(`ask`) unless an approval granted in this turn for exactly that action is at
hand. `ConsentGate` answers the loop's asks from those approvals only.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Action
from metis_trace import Decision
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import FrameworkStep
from metis_trace import PauseKind
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import StepStatus
from metis_trace import ToolKind

from .._errors import ToolError
from .._loop import LoopObserver
from .._trace import TraceWriter
from ..dispatch import AskAnswer
from ..dispatch import GateDecisionLike
from ..dispatch import GateLike
from ..providers import AssistantMessage
from ..providers import MessageComplete
from ..providers import ModelRequest
from ..providers import StreamEvent
from ..providers import TextBlock
from ..providers import ToolUseBlock
from ..tools import ToolContext
from ..tools import resolve_path
from . import _rules
from ._catalog import Catalog
from ._catalog import read_error

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
_RAN = (StepStatus.OK, StepStatus.ERROR)


class RecordingTrace(TraceWriter):
    """A trace writer that also keeps what it wrote about call occurrences."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.about: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    def emit(self, kind: str, causes: tuple[int, ...] = (), **fields: Any) -> int:
        seq = super().emit(kind, causes, **fields)
        occ = fields.get("occ")
        if isinstance(occ, str):
            self.about.setdefault(occ, []).append((kind, fields))
        return seq


class ConsentGate:
    """The real gate's decisions; its asks answered by this turn's approvals only."""

    def __init__(self, gate: GateLike[Any], catalog: Catalog, owner: str, turn: str) -> None:
        self.gate = gate
        self.catalog = catalog
        self.owner = owner
        self.turn = turn
        self.granted: dict[str, Action] = {}  # dialog -> the action it approved
        self.used: dict[str, str] = {}  # dialog -> occurrence it authorized
        self.by_occ: dict[str, tuple[str, Action]] = {}

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[Path],
        command: str | None,
    ) -> Any:
        return self.gate.decide(tool, input, kind, paths, command)

    def hides(self, path: Path) -> bool:
        """The real gate's `hides` (the search tools' hidden files), if it has one."""
        hides = getattr(self.gate, "hides", None)
        return callable(hides) and bool(hides(path))

    def approval_for(self, action: Action) -> str | None:
        return next(
            (d for d, a in self.granted.items() if a == action and d not in self.used), None
        )

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: GateDecisionLike
    ) -> Any:
        if decision.route in _WAITLESS:
            return await self.gate.resolve_ask(occ, tool, input, decision)
        want = _rules.action(self.owner, self.turn, self.catalog.info(tool), input)
        dialog = self.approval_for(want)
        if dialog is None:
            return AskAnswer(False, "policy")  # nothing approved this action
        self.used[dialog] = occ
        self.by_occ[occ] = (dialog, want)
        return AskAnswer(True, "user")


@attrs.define
class StepResult:
    number: int
    status: StepStatus
    output: Any = None
    origin: str = "request"
    committed: bool = False
    tool: str = ""
    effect: ToolKind = ToolKind.READ_ONLY


@attrs.define
class Pending:
    number: int
    step: FrameworkStep
    info: ExecutorInfo
    resolved: _rules.Resolved
    occ: str
    t: float


class Pause(Exception):
    def __init__(
        self, kind: PauseKind, number: int, action: Action | None, missing: tuple[str, ...]
    ) -> None:
        super().__init__(kind.value)
        self.kind = kind
        self.number = number
        self.action = action
        self.missing = missing


class PlanDriver(LoopObserver):
    """The provider of a plan segment, and its observer (see the module docstring).

    `turn` is the `_turn.TurnRun` that owns the turn log, the state, the
    recovery and the final answer; the driver calls back into it."""

    name = "plan"

    def __init__(
        self, turn: Any, trace: RecordingTrace, gate: ConsentGate, ctx: ToolContext
    ) -> None:
        self.turn = turn
        self.trace = trace
        self.gate = gate
        self.ctx = ctx
        self.loop_turn = 0
        self.pending: list[Pending] = []
        self.results: dict[str, tuple[ResultStatus, str, float | None]] = {}

    # --- LoopObserver -------------------------------------------------------------------

    def call_finished(
        self, occ: str, tool: str, status: ResultStatus, content: str, seconds: float | None
    ) -> None:
        self.results[occ] = (status, content, seconds)

    # --- Provider -----------------------------------------------------------------------

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._answer()

    async def _answer(self) -> AsyncIterator[StreamEvent]:
        message = await self._next()
        yield MessageComplete(message)

    def _message(self, blocks: Sequence[Any], stop: str) -> AssistantMessage:
        t = self.turn
        return AssistantMessage(
            message_id=f"plan-{t.turn_id}-{t.state.segment}-{self.loop_turn}",
            blocks=tuple(blocks),
            stop_reason=stop,
        )

    async def _next(self) -> AssistantMessage:
        self.loop_turn += 1
        if self.pending:
            self._collect()
        t = self.turn
        while True:
            if t.failure is not None:
                await t.after_failure()  # one recovery, or the turn stops
            if t.stopped:
                return self._message([TextBlock(t.final_text())], "end_turn")
            numbers = t.next_batch()
            if not numbers:
                t.stop_completed()
                continue
            try:
                calls = await self._prepare(numbers)
            except Pause as pause:
                t.pause(pause.kind, pause.number, pause.action, pause.missing)
                return self._message([TextBlock(t.final_text())], "end_turn")
            if not calls:
                continue
            self._save_undo(calls)
            self.pending = calls
            blocks = [
                ToolUseBlock(
                    id=f"plan_{t.state.segment}_{self.loop_turn}_{c.number}",
                    name=c.step.tool,
                    input=dict(c.resolved.args or {}),
                )
                for c in calls
            ]
            return self._message(blocks, "tool_use")

    async def _prepare(self, numbers: Sequence[int]) -> list[Pending]:
        """Resolve a batch; record skips and refusals; raise Pause to stop before it."""
        t = self.turn
        calls: list[Pending] = []
        for number in numbers:
            step = t.framework.steps[number - 1]
            info = t.catalog.info(step.tool)
            res = t.resolve(step, number, info)
            if res.missing:
                await t.try_fillers(res.missing)
                res = t.resolve(step, number, info)
                if res.missing:
                    raise Pause(PauseKind.NEEDS_INPUTS, number, None, res.missing)
            if res.refused is not None:
                cls, message = res.refused
                t.record_step(number, step, info, res, StepStatus.REFUSED, error=(cls, message))
                t.fail(number, cls, message)
                return []
            if not _rules.condition_met(step, t.done_view()):
                t.record_step(number, step, info, res, StepStatus.SKIPPED_CONDITION)
                continue
            if res.empty:
                t.record_step(number, step, info, res, StepStatus.SKIPPED_EMPTY)
                continue
            occ = f"{self.loop_turn}.{len(calls)}"
            calls.append(Pending(number, step, info, res, occ, t.clock()))
        for call in calls:
            self._check_consent(call)
        return calls

    def _check_consent(self, call: Pending) -> None:
        """Would the gate ask about this call? Then pause, unless it is approved."""
        args = call.resolved.args or {}
        tool = self.turn.catalog.registry.get(call.step.tool)
        try:
            c = tool.classify(args, self.ctx)
        except (ToolError, ValueError):
            return  # the loop refuses it with an error result
        decision = self.gate.decide(call.step.tool, args, c.kind, c.paths, c.command)
        if decision.decision is not Decision.ASK:
            return
        # Headless or background (a task firing) too: the owner is asked in a
        # dialog, rather than the call denied by the headless default.
        want = _rules.action(self.turn.owner, self.turn.turn_id, call.info, args)
        if self.gate.approval_for(want) is None:
            raise Pause(PauseKind.ASK, call.number, want, ())

    def _save_undo(self, calls: Sequence[Pending]) -> None:
        """Keep what an edit is about to change, for `undo last turn`."""
        for call in calls:
            if call.info.effect is not ToolKind.EDIT:
                continue
            for name in call.info.paths:
                value = (call.resolved.args or {}).get(name)
                if isinstance(value, str) and value:
                    try:
                        path = resolve_path(
                            self.ctx.workspace, value, tool=call.step.tool, field=name
                        )
                    except ToolError:
                        continue
                    self.turn.save_preimage(path)

    def _collect(self) -> None:
        """The batch that just ran: its step records, from results and the trace."""
        t = self.turn
        calls, self.pending = self.pending, []
        failure: tuple[int, ErrorClass, str] | None = None
        for c in calls:
            status, content, seconds = self.results.get(
                c.occ, (ResultStatus.ERROR, "no result", None)
            )
            about = self.trace.about.get(c.occ, [])
            decision = next((f["decision"] for k, f in about if k == "decision"), None)
            asked = next((f for k, f in about if k == "ask_resolved"), None)
            committed = any(k == "effect_end" and f.get("committed") for k, f in about)
            approval = self.gate.by_occ.get(c.occ)
            fields: dict[str, Any] = {
                "occ": c.occ,
                "decision": decision,
                "approved": None if asked is None else bool(asked["approved"]),
                "approval": approval,
                "committed": committed,
                "seconds": seconds,
                "t": c.t,
            }
            if status is ResultStatus.OK:
                try:
                    output = json.loads(content)
                except json.JSONDecodeError:
                    output = content
                t.record_step(
                    c.number, c.step, c.info, c.resolved, StepStatus.OK, output=output, **fields
                )
            elif status is ResultStatus.DENIED:
                t.record_step(c.number, c.step, c.info, c.resolved, StepStatus.DENIED, **fields)
                failure = failure or (c.number, ErrorClass.WRONG_ARGS, "denied: " + content)
                t.denied = True
            else:
                cls_name, message = read_error(content)
                cls = ErrorClass(cls_name)
                t.record_step(
                    c.number,
                    c.step,
                    c.info,
                    c.resolved,
                    StepStatus.ERROR,
                    error=(cls, message),
                    **fields,
                )
                failure = failure or (c.number, cls, message)
        if failure is not None:
            t.fail(*failure)


def copy_preimage(src: Path, folder: Path, index: int) -> dict[str, Any]:
    """Save `src` (or its absence) in `folder`; the record `restore_files` reads."""
    entry: dict[str, Any] = {"path": str(src), "existed": src.is_file(), "saved": None}
    if src.is_file():
        saved = folder / f"{index:04d}"
        shutil.copyfile(src, saved)
        entry["saved"] = saved.name
    return entry
