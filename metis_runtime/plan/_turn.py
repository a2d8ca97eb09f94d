"""`TurnRun`: the working state of one segment of one turn (specs/plan.md).

`PlanRuntime` (`_plan_runtime.py`) builds one per segment; the driver
(`_driver.PlanDriver`) calls back into it to resolve steps, write the step,
recovery and pause records, recover once, pause with a dialog, and compose
the final answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from metis_trace import STRUCTURAL
from metis_trace import TERMINAL_TOOL
from metis_trace import Action
from metis_trace import EffectCounts
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import FinalState
from metis_trace import Framework
from metis_trace import FrameworkRecord
from metis_trace import FrameworkStep
from metis_trace import PauseKind
from metis_trace import PauseRecord
from metis_trace import PlanPath
from metis_trace import RecoveryRecord
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import ToolKind
from metis_trace import TurnHeader

from . import _rules
from ._catalog import Catalog
from ._driver import copy_preimage
from ._engine import ProposalError
from ._engine import Proposer
from ._state import Dialog
from ._state import DoneStep
from ._state import TurnLogWriter
from ._state import TurnState
from ._state import save_dialog
from ._state import save_state
from ._state import turn_dir
from ._store import PlanStore
from ._turn_types import _FINISHED
from ._turn_types import _now

if TYPE_CHECKING:
    from ._plan_runtime import PlanRuntime


class TurnRun:
    """The working state of one segment of one turn (the driver calls back here)."""

    def __init__(
        self,
        runtime: PlanRuntime,
        header: TurnHeader,
        catalog: Catalog,
        store: PlanStore,
        writer: TurnLogWriter,
        state: TurnState,
        proposer: Proposer | None,
        live: bool,
    ) -> None:
        self.runtime = runtime
        self.header = header
        self.turn_id = header.turn_id
        self.owner = header.owner
        self.catalog = catalog
        self.store = store
        self.writer = writer
        self.state = state
        self.proposer = proposer
        self.live = live
        self.stopped: str | None = None  # a FinalState value or "paused"
        self.reason = ""
        self.failure: tuple[int, ErrorClass, str] | None = None
        self.denied = False
        self._t0 = time.monotonic()
        self.dialog: Dialog | None = None

    @property
    def framework(self) -> Framework:
        return self.state.framework

    def clock(self) -> float:
        return round(time.monotonic() - self._t0, 6)

    def done_view(self) -> dict[int, _rules.Done]:
        return {int(k): _rules.Done(v.output, v.origin) for k, v in self.state.done.items()}

    def _fillers(self) -> dict[str, str]:
        defaults = {
            k: f.default for k, f in self.framework.fillers.items() if f.default is not None
        }
        return {**defaults, **self.state.inputs}

    def resolve(self, step: FrameworkStep, number: int, info: ExecutorInfo) -> _rules.Resolved:
        return _rules.resolve(
            step,
            number,
            info,
            self.done_view(),
            runtime=self.header.runtime,
            fillers=self._fillers(),
            targets=self.header.targets,
        )

    async def try_fillers(self, missing: Sequence[str]) -> None:
        """Ask a live provider for filler values (the replay provider has none to give)."""
        if not self.live or self.proposer is None:
            return
        for name in missing:
            filler = self.framework.fillers.get(name)
            if filler is None:
                continue
            value = await self.proposer.fill(name, filler, self.header.request)
            if value is not None:
                self.state.inputs[name] = value

    def next_batch(self) -> list[int]:
        for group in _rules.batches(self.framework):
            left = [n for n in group if str(n) not in self.state.done]
            if left:
                return left
        return []

    # --- records --------------------------------------------------------------------

    def record_step(
        self,
        number: int,
        step: FrameworkStep,
        info: ExecutorInfo,
        res: _rules.Resolved,
        status: StepStatus,
        *,
        output: Any = None,
        error: tuple[ErrorClass, str] | None = None,
        occ: str | None = None,
        decision: Any = None,
        approved: bool | None = None,
        approval: tuple[str, Action] | None = None,
        committed: bool = False,
        seconds: float | None = None,
        t: float | None = None,
    ) -> None:
        produced = len(output) if isinstance(output, list) else None
        self.writer.write(
            StepRecord(
                attempt=self.state.attempt,
                index=number,
                tool=step.tool,
                segment=self.state.segment,
                raw_args=step.args,
                resolved_args=res.args,
                refs=res.refs,
                origins=res.origins,
                fillers=res.fillers,
                effect=info.effect,
                occ=occ,
                decision=decision,
                approved=approved,
                approval=approval[1] if approval else None,
                approval_dialog=approval[0] if approval else None,
                status=status,
                committed=committed,
                error_class=error[0] if error else None,
                error=error[1] if error else "",
                output=output if status is StepStatus.OK else None,
                consumed=res.consumed,
                produced=produced,
                t=self.clock() if t is None else t,
                seconds=seconds,
            )
        )
        if status.value in _FINISHED:
            self.state.done[str(number)] = DoneStep(
                status=status.value,
                output=output if status is StepStatus.OK else None,
                origin=_rules.output_origin(info, res.origins),
                committed=committed,
                tool=step.tool,
                effect=info.effect.value,
            )
        if committed:
            self.state.committed.append(
                {
                    "attempt": self.state.attempt,
                    "index": number,
                    "tool": step.tool,
                    "effect": info.effect.value,
                }
            )

    def fail(self, number: int, cls: ErrorClass, message: str) -> None:
        if self.failure is None:
            self.failure = (number, cls, message)

    async def after_failure(self) -> None:
        """One recovery when it is safe (structural, nothing committed, none yet);
        else the turn stops, saying why."""
        assert self.failure is not None
        number, cls, message = self.failure
        self.failure = None
        committed = len(self.state.committed)
        safe = (
            cls in STRUCTURAL
            and not self.denied
            and committed == 0
            and self.state.recoveries == 0
            and self.proposer is not None
        )
        if not safe:
            why = f"step {number} failed ({cls.value}): {message}"
            if committed:
                why += f"; {committed} effect(s) had committed, so nothing was retried"
            elif cls is ErrorClass.OPERATIONAL:
                why += "; an operational failure is not recovered by another plan"
            elif self.state.recoveries:
                why += "; the one recovery was already used"
            self.stop(FinalState.FAILED, why)
            return
        await self.recover(number, cls, message)

    async def recover(self, number: int | None, cls: ErrorClass, message: str) -> bool:
        assert self.proposer is not None
        self.writer.write(
            RecoveryRecord(
                after_step=number, error_class=cls, committed_before=len(self.state.committed)
            )
        )
        self.state.recoveries += 1
        where = "the plan" if number is None else f"step {number}"
        try:
            framework = await self.proposer.propose(
                self.header.request, feedback=f"{where} failed ({cls.value}): {message}"
            )
        except ProposalError as exc:
            self.stop(FinalState.FAILED, f"no alternative plan: {exc}")
            return False
        failures = _rules.validate(framework, self.catalog.infos, self.header.cap)
        self.writer.write(
            FrameworkRecord(
                source=PlanPath.RECOVERY,
                attempt=1,
                framework=framework,
                valid=not failures,
                failures=tuple(failures),
            )
        )
        if failures:
            self.stop(
                FinalState.FAILED, f"the alternative plan is not valid: {failures[0].message}"
            )
            return False
        self.state.framework = framework
        self.state.attempt = 1
        self.state.done = {}
        self.state.path = PlanPath.RECOVERY.value
        return True

    def stop(self, state: FinalState, reason: str = "") -> None:
        if self.stopped is None:
            self.stopped = state.value
            self.reason = reason

    def stop_completed(self) -> None:
        self.stop(FinalState.COMPLETED)

    def pause(
        self, kind: PauseKind, number: int, action: Action | None, missing: tuple[str, ...]
    ) -> None:
        dialog_id = f"dlg-{self.turn_id}-{self.state.segment}"
        step = self.framework.steps[number - 1]
        if kind is PauseKind.ASK:
            dest = action.destination if action else ""
            prompt = f"step {number}: allow {step.tool} on {dest}?"
        else:
            prompt = f"step {number}: {step.tool} needs {', '.join(missing)}"
        self.dialog = Dialog(
            id=dialog_id,
            turn_id=self.turn_id,
            owner=self.owner,
            channel=self.header.channel,
            conversation=self.header.conversation,
            reason=kind,
            step=number,
            pending=action,
            missing=missing,
            prompt=prompt,
            created_at=_now().isoformat(),
        )
        save_dialog(self.runtime.workspace, self.dialog)
        self.writer.write(
            PauseRecord(
                dialog=dialog_id,
                reason=kind,
                attempt=self.state.attempt,
                step=number,
                pending=action,
                missing=missing,
            )
        )
        self.state.dialog = dialog_id
        save_state(self.runtime.workspace, self.state)
        self.stopped = "paused"

    def save_preimage(self, path: Path) -> None:
        folder = turn_dir(self.runtime.workspace, self.turn_id) / "undo"
        folder.mkdir(mode=0o700, exist_ok=True)
        index_file = folder / "index.json"
        entries = json.loads(index_file.read_text()) if index_file.exists() else []
        if any(e["path"] == str(path) for e in entries):
            return  # the first snapshot of a turn is the one undo restores
        entries.append(copy_preimage(path, folder, len(entries)))
        index_file.write_text(json.dumps(entries, indent=1))

    # --- the answer ---------------------------------------------------------------------

    def claims(self) -> tuple[int, ...]:
        return tuple(
            int(n)
            for n, d in sorted(self.state.done.items(), key=lambda kv: int(kv[0]))
            if d.status == "ok" and (d.committed or d.effect not in ("edit", "exec"))
        )

    def effects(self) -> EffectCounts:
        by_tool: dict[str, int] = {}
        for c in self.state.committed:
            by_tool[c["tool"]] = by_tool.get(c["tool"], 0) + 1
        mutations = sum(1 for c in self.state.committed if c["effect"] in ("edit", "exec"))
        return EffectCounts(
            committed=len(self.state.committed), mutations=mutations, by_tool=by_tool
        )

    def final_text(self) -> str:
        if self.stopped == "paused" and self.dialog is not None:
            how = (
                "--approve or --reject"
                if self.dialog.reason is PauseKind.ASK
                else " ".join(f"--input {m}=VALUE" for m in self.dialog.missing)
            )
            return (
                f"Paused ({self.dialog.prompt}). Answer: metis plan resume {self.dialog.id} {how}"
            )
        done = []
        for n in self.claims():
            d = self.state.done[str(n)]
            what = "committed" if d.committed else "done"
            done.append(f"step {n} {d.tool}: {what}")
        e = self.effects()
        counted = f"{e.committed} effect(s) committed"
        if self.stopped == FinalState.COMPLETED.value and self.reason and not done:
            return self.reason  # a route that ran no step (a recorded task)
        if self.stopped == FinalState.COMPLETED.value:
            text = self._terminal_text()
            return (
                text + "\n" if text else ""
            ) + f"Done: {'; '.join(done) or 'nothing to do'}. {counted}."
        partial = f" Partial results: {'; '.join(done)}." if done else ""
        if self.stopped == FinalState.REJECTED.value:
            return f"Rejected: the pending step was not run.{partial} {counted}."
        return f"Stopped: {self.reason}.{partial} {counted}."

    def _terminal_text(self) -> str:
        terminal = self.framework.steps[-1]
        raw = terminal.args.get("text") if terminal.tool == TERMINAL_TOOL else None
        if not isinstance(raw, str):
            return ""
        info = ExecutorInfo(
            name=TERMINAL_TOOL, digest="", effect=ToolKind.READ_ONLY, family="terminal"
        )
        res = self.resolve(
            FrameworkStep(tool=TERMINAL_TOOL, args={"text": raw}), len(self.framework.steps), info
        )
        value = (res.args or {}).get("text")
        return value if isinstance(value, str) else ""
