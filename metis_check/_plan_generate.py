"""Valid turn logs from the model: the plan path run by the model itself.

`simulate_turn(seed)` builds one turn over a small catalog (`TOY_CATALOG`):
a framework that reads, filters and writes (sometimes invalid first, then
recovered once), reached by the engine or by a valid L0 / L1 hit; every step
resolved with `resolve_step`; mutations asked about, paused for and approved
in a resumed dialog (or rejected); empty collections skipped; operational and
structural failures; data from another host refused. Every log it returns
conforms (`check_turn_log`); the mutators in `_plan_mutate.py` break them one ID
at a time.
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from metis_model.plan._cache import current_signatures
from metis_model.plan._cache import grounded
from metis_model.plan._catalog import catalog_of
from metis_model.plan._consent import action_for
from metis_model.plan._effects import effect_counts
from metis_model.plan._refs import ResolveContext
from metis_model.plan._refs import condition_holds
from metis_model.plan._refs import output_origin
from metis_model.plan._refs import resolve_step
from metis_model.plan._request import canonical_request
from metis_model.plan._validate import validate
from metis_trace import DEFAULT_STEP_CAP
from metis_trace import MUTATING_KINDS
from metis_trace import TERMINAL_TOOL
from metis_trace import Action
from metis_trace import CatalogRecord
from metis_trace import Decision
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import Filler
from metis_trace import FinalRecord
from metis_trace import FinalState
from metis_trace import Framework
from metis_trace import FrameworkRecord
from metis_trace import FrameworkStep
from metis_trace import Mode
from metis_trace import PathRecord
from metis_trace import PauseKind
from metis_trace import PauseRecord
from metis_trace import PlanPath
from metis_trace import ProbeOutcome
from metis_trace import RecoveryRecord
from metis_trace import ResumeAnswer
from metis_trace import Route
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import TaskRef
from metis_trace import ToolKind
from metis_trace import TurnHeader
from metis_trace import TurnRecord
from metis_trace import framework_digest

from ._plan_records import object_schema
from ._plan_records import owner_resume

__all__ = ["TOY_CATALOG", "SimTurn", "simulate_turn"]


TOY_CATALOG: tuple[ExecutorInfo, ...] = (
    ExecutorInfo(
        name="find_items",
        digest="sha256:find1",
        effect=ToolKind.READ_ONLY,
        family="items.find",
        produces="collection",
        args_schema=object_schema({"folder": "string"}, ("folder",)),
        paths=("folder",),
    ),
    ExecutorInfo(
        name="phone_photos",
        digest="sha256:photos1",
        effect=ToolKind.READ_ONLY,
        family="items.find",
        host="phone",
        produces="collection",
        args_schema=object_schema({"album": "string"}, ("album",)),
    ),
    ExecutorInfo(
        name="filter_items",
        digest="sha256:filter1",
        effect=ToolKind.READ_ONLY,
        family="items.filter",
        produces="collection",
        consumes="items",
        preserves_origin=True,
        args_schema=object_schema({"items": "array", "pattern": "string"}, ("items",)),
    ),
    ExecutorInfo(
        name="read_items",
        digest="sha256:read1",
        effect=ToolKind.READ_ONLY,
        family="items.read",
        produces="collection",
        consumes="items",
        args_schema=object_schema({"items": "array"}, ("items",)),
        paths=("items",),
    ),
    ExecutorInfo(
        name="write_doc",
        digest="sha256:write1",
        effect=ToolKind.EDIT,
        family="doc.create",
        produces="object",
        consumes="sections",
        args_schema=object_schema(
            {"sections": "array", "path": "string", "title": "string"}, ("sections", "path")
        ),
        paths=("path",),
        destination="path",
    ),
    ExecutorInfo(
        name="send_message",
        digest="sha256:send1",
        effect=ToolKind.EXEC,
        family="message.send",
        produces="object",
        args_schema=object_schema(
            {"to": "string", "channel": "string", "text": "string"}, ("text",)
        ),
        requires_one_of=(("to", "channel"),),
        destination="to",
    ),
)
_CATALOG = catalog_of(TOY_CATALOG)


def _step(tool: str, **args: Any) -> FrameworkStep:
    when = args.pop("when", None)
    return FrameworkStep.model_validate({"tool": tool, "args": args, "when": when})


@attrs.frozen
class SimTurn:
    header: TurnHeader
    records: tuple[TurnRecord, ...]


class _Sim:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.records: list[TurnRecord] = []
        self.t = 0.0
        self.committed: list[StepRecord] = []
        self.recovered = False
        self.segment = 1
        self.inputs: dict[str, str] = {}
        self.dialogs = 0

    def now(self) -> float:
        self.t += round(self.rng.uniform(0.001, 0.05), 6)
        return self.t

    # --- the turn -------------------------------------------------------------

    def header(self) -> TurnHeader:
        rng = self.rng
        owner = rng.choice(["alice", "bob"])
        folder = rng.choice(["notes", "inbox", "docs"])
        path = f"Reports/{rng.choice(['summary', 'digest'])}-{self.seed % 7}.md"
        self.folder, self.path = folder, path
        request = f"Collect the items in {folder} and write them to {path}"
        scheduled = rng.random() < 0.2
        mode = rng.choice([Mode.DEFAULT, Mode.DEFAULT, Mode.ACCEPT_EDITS])
        channel = rng.choice(["cli", "web", "telegram"])
        task = TaskRef(id=f"task-{self.seed}", owner=owner, channel=channel, mode=mode)
        return TurnHeader(
            turn_id=f"turn-{self.seed}",
            owner=owner,
            actor="scheduler" if scheduled else owner,
            channel=channel,
            conversation=f"c-{self.seed % 3}",
            request=request,
            canonical=canonical_request(request),
            targets={"path": path} if rng.random() < 0.5 else {},
            runtime={"turn_id": f"turn-{self.seed}", "owner": owner, "now": "2025-01-01T08:00:00"},
            mode=mode,
            route=Route.BACKGROUND if scheduled else Route.INTERACTIVE,
            cap=rng.choice([DEFAULT_STEP_CAP, 6, 12]),
            epoch=rng.randint(1, 3),
            task=task if scheduled else None,
            producer="metis_model.plan (simulated)",
        )

    def framework(self, valid: bool) -> Framework:
        rng = self.rng
        source = (
            _step("phone_photos", album="camera")
            if rng.random() < 0.15
            else _step("find_items", folder=self.folder)
        )
        steps = [source]
        if rng.random() < 0.5:
            steps.append(_step("filter_items", from_step=len(steps), pattern="*.md"))
        steps.append(_step("read_items", from_step=len(steps)))
        path = "${RUNTIME:target.path}" if rng.random() < 0.3 else self.path
        title = "${FILLER:title}" if rng.random() < 0.5 else "Items"
        write = {"from_step": len(steps), "path": path, "title": title}
        if rng.random() < 0.3:
            write["when"] = {"nonempty": len(steps)}
        steps.append(_step("write_doc", **write))
        if rng.random() < 0.4:
            steps.append(
                _step(
                    "send_message",
                    to="${RUNTIME:owner}",
                    text="Wrote ${step" + str(len(steps)) + ".path}",
                )
            )
        steps.append(_step(TERMINAL_TOOL))
        if not valid:
            broken = rng.choice(["tool", "forward"])
            if broken == "tool":
                steps[0] = _step("find_everything", folder=self.folder)
            else:
                steps[1] = steps[1].model_copy(update={"args": {**steps[1].args, "from_step": 3}})
        fillers = {"title": Filler(prompt="A title", default=rng.choice([None, "Summary"]))}
        return Framework(steps=tuple(steps), fillers=fillers)

    def run(self) -> SimTurn:
        rng = self.rng
        h = self.header()
        self.h = h
        self.records.append(CatalogRecord(segment=1, executors=TOY_CATALOG))
        route = rng.choice(["engine", "engine", "L0", "L1"])
        first_valid = rng.random() < 0.8 or route != "engine"
        fw = self.framework(first_valid)
        if route != "engine" and not validate(fw, _CATALOG, h.cap) and self._reusable(fw):
            self.cached(fw, PlanPath.L0 if route == "L0" else PlanPath.L1)
            source = PlanPath.L0 if route == "L0" else PlanPath.L1
        else:
            self.records.append(
                PathRecord(path=PlanPath.L0, outcome=ProbeOutcome.ABSENT, entry=h.canonical)
            )
            self.records.append(PathRecord(path=PlanPath.ENGINE, outcome=ProbeOutcome.USED))
            source = PlanPath.ENGINE
        if self.attempt(fw, source, 0) == "recover":
            self.attempt(self.framework(True), PlanPath.RECOVERY, 1)
        return SimTurn(h, tuple(self.records))

    def _reusable(self, fw: Framework) -> bool:
        return grounded(fw, _CATALOG, self.h.request, self.h.targets)

    def cached(self, fw: Framework, path: PlanPath) -> None:
        sigs = current_signatures(fw, _CATALOG, self.h.epoch)
        self.records.append(
            PathRecord(
                path=path,
                outcome=ProbeOutcome.HIT,
                entry=self.h.canonical if path is PlanPath.L0 else "intent:collect-write",
                stored=sigs,
                current=sigs,
                grounded=True,
                champion=True if path is PlanPath.L1 else None,
                framework_digest=framework_digest(fw),
                registered_by=f"turn-{self.seed - 1}",
            )
        )

    def attempt(self, fw: Framework, source: PlanPath, attempt: int) -> str:
        h = self.h
        failures = validate(fw, _CATALOG, h.cap)
        self.records.append(
            FrameworkRecord(
                source=source, attempt=attempt, framework=fw, valid=not failures, failures=failures
            )
        )
        if failures:
            return self.fail_structural(None, failures[0].cls)
        outputs: dict[int, Any] = {}
        origins: dict[int, str] = {}
        done: dict[int, StepRecord] = {}
        for index, step in enumerate(fw.steps, start=1):
            if step.tool == TERMINAL_TOOL:
                break
            executor = _CATALOG[step.tool]
            fillers = {k: f.default for k, f in fw.fillers.items() if f.default is not None}
            fillers.update(self.inputs)
            ctx = ResolveContext(outputs, origins, h.runtime, fillers, h.targets)
            res = resolve_step(step, index, executor, ctx)
            if res.missing:
                self.pause(PauseKind.NEEDS_INPUTS, attempt, index, None, res.missing)
                answer = self.resume(
                    PauseKind.NEEDS_INPUTS, done, {n: "Report" for n in res.missing}
                )
                self.inputs.update({n: "Report" for n in res.missing})
                if answer is None:
                    return "ended"
                fillers.update(self.inputs)
                res = resolve_step(step, index, executor, attrs.evolve(ctx, fillers=fillers))
            base = dict(
                attempt=attempt,
                index=index,
                tool=step.tool,
                segment=self.segment,
                raw_args=step.args,
                refs=res.refs,
                origins=res.origins,
                fillers=res.fillers,
                effect=executor.effect,
                t=self.now(),
            )
            if res.failure is not None:
                cls, message = res.failure
                self.records.append(
                    StepRecord(**base, status=StepStatus.REFUSED, error_class=cls, error=message)
                )
                return self.fail_structural(index, cls)
            assert res.args is not None
            if not condition_holds(step, outputs):
                rec = StepRecord(
                    **base, resolved_args=res.args, status=StepStatus.SKIPPED_CONDITION
                )
            elif res.empty:
                rec = StepRecord(
                    **base, resolved_args=res.args, status=StepStatus.SKIPPED_EMPTY, consumed=0
                )
            else:
                got = self.execute(step, index, executor, res.args, base, done, attempt)
                if isinstance(got, str):
                    return got
                rec = got
            self.records.append(rec)
            done[index] = rec
            if rec.status is StepStatus.OK:
                outputs[index] = rec.output
                origins[index] = output_origin(executor, res)
            else:
                outputs[index] = None
                origins[index] = output_origin(executor, res)
            if rec.committed:
                self.committed.append(rec)
            if rec.status is StepStatus.ERROR:
                if rec.error_class is ErrorClass.OPERATIONAL:
                    return self.final(FinalState.FAILED, done)
                return self.fail_structural(index, rec.error_class or ErrorClass.WRONG_ARGS)
        return self.final(FinalState.COMPLETED, done)

    def execute(
        self,
        step: FrameworkStep,
        index: int,
        executor: ExecutorInfo,
        args: dict[str, Any],
        base: dict[str, Any],
        done: dict[int, StepRecord],
        attempt: int,
    ) -> StepRecord | str:
        rng, h = self.rng, self.h
        mutating = executor.effect in MUTATING_KINDS
        ask = mutating and not (h.mode is Mode.ACCEPT_EDITS and executor.effect is ToolKind.EDIT)
        approval: Action | None = None
        dialog: str | None = None
        decision = Decision.ASK if ask else Decision.ALLOW
        if ask:
            action = action_for(h.owner, h.turn_id, executor, args)
            dialog = self.pause(PauseKind.ASK, attempt, index, action, ())
            if self.resume(PauseKind.ASK, done, {}) is None:
                if rng.random() < 0.5:  # the rejected call still goes to the gate, and is denied
                    self.records.append(
                        StepRecord(
                            **base,
                            resolved_args=args,
                            decision=Decision.ASK,
                            approved=False,
                            occ=f"{self.segment}.{index}",
                            status=StepStatus.DENIED,
                        )
                    )
                return self.final(FinalState.REJECTED, done)
            approval = action
        roll = rng.random()
        ran = dict(
            base,
            resolved_args=args,
            decision=decision,
            occ=f"{self.segment}.{index}",
            consumed=len(args[executor.consumes]) if executor.consumes in args else None,
        )
        granted = dict(
            ran, approved=True if ask else None, approval=approval, approval_dialog=dialog
        )
        if roll < 0.06:
            return StepRecord(
                **granted,
                status=StepStatus.ERROR,
                committed=mutating and rng.random() < 0.5,
                error_class=ErrorClass.OPERATIONAL,
                error="timeout",
            )
        if roll < 0.1 and not mutating:
            return StepRecord(
                **ran,
                status=StepStatus.ERROR,
                error_class=ErrorClass.MISSING_INPUT,
                error="not found",
            )
        output = self.output(step, executor, args)
        return StepRecord(
            **granted,
            status=StepStatus.OK,
            committed=mutating,
            output=output,
            produced=len(output) if isinstance(output, list) else None,
            seconds=0.01,
        )

    def output(self, step: FrameworkStep, executor: ExecutorInfo, args: dict[str, Any]) -> Any:
        rng = self.rng
        if step.tool == "find_items":
            return [f"{args['folder']}/{n}.md" for n in range(rng.choice([0, 1, 2, 3]))]
        if step.tool == "phone_photos":
            return [f"/sdcard/DCIM/{n}.jpg" for n in range(rng.choice([1, 2]))]
        if step.tool == "filter_items":
            return list(args["items"])[: rng.randint(0, len(args["items"]))]
        if step.tool == "read_items":
            return [{"path": p, "text": f"text of {p}"} for p in args["items"]]
        if step.tool == "write_doc":
            return {"path": args["path"], "bytes": 10 * len(args["sections"])}
        return {"sent": True, "to": args.get("to", "")}

    def pause(
        self,
        reason: PauseKind,
        attempt: int,
        index: int,
        action: Action | None,
        missing: tuple[str, ...],
    ) -> str:
        self.dialogs += 1
        dialog = f"dlg-{self.seed}-{self.dialogs}"
        self.records.append(
            PauseRecord(
                dialog=dialog,
                reason=reason,
                attempt=attempt,
                step=index,
                pending=action,
                missing=missing,
            )
        )
        self.dialog = dialog
        return dialog

    def resume(
        self, reason: PauseKind, done: dict[int, StepRecord], inputs: dict[str, str]
    ) -> str | None:
        rng, h = self.rng, self.h
        reject = reason is PauseKind.ASK and rng.random() < 0.1
        answer = (
            ResumeAnswer.REJECT
            if reject
            else ResumeAnswer.INPUT
            if reason is PauseKind.NEEDS_INPUTS
            else ResumeAnswer.APPROVE
        )
        self.segment += 1
        self.records.append(
            owner_resume(
                h,
                dialog=self.dialog,
                answer=answer,
                inputs=inputs,
                segment=self.segment,
                done=tuple(sorted(done)),
                committed=tuple(sorted(i for i, r in done.items() if r.committed)),
            )
        )
        if reason is PauseKind.NEEDS_INPUTS:
            self.inputs.update(inputs)
        return None if reject else answer.value

    def fail_structural(self, index: int | None, cls: ErrorClass) -> str:
        if not self.recovered and not self.committed:
            self.recovered = True
            self.records.append(
                RecoveryRecord(after_step=index, error_class=cls, committed_before=0)
            )
            return "recover"
        return self.final(FinalState.FAILED, {})

    def final(self, state: FinalState, done: dict[int, StepRecord]) -> str:
        claims = tuple(
            i
            for i, r in done.items()
            if r.status is StepStatus.OK and (r.committed or r.effect not in MUTATING_KINDS)
        )
        self.records.append(
            FinalRecord(
                state=state,
                answer=f"{state.value}: steps {list(claims)} done",
                claims=claims,
                effects=effect_counts(self.committed),
                seconds=self.t,
            )
        )
        return "ended"


def simulate_turn(seed: int) -> SimTurn:
    """One valid turn log, deterministic in `seed`."""
    return _Sim(seed).run()
