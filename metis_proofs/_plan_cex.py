"""Minimal counterexamples for the plan ablations, as turn logs.

`find_plan_counterexample(ablation)` asks z3 for the weakened decision's
witness (for the turn-system ablations: the shortest path from `init` by
BMC) and writes it down as a concrete turn log of the smallest turn that
shows it. `check_turn_log` must reject that log with the ablation's ID
(`confirmed`); `metis conform` reads it like any turn log. Files are written
by the shared counterexample writer (`_cex.write_counterexample`): the turn
log JSONL, ITF JSON of the abstract states, a DOT/SVG graph of the records
with the violating one in red, and a pytest regression file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import graphviz
import z3

from metis_check import check_turn_log
from metis_check import figure_graph
from metis_check._plan_records import object_schema
from metis_check._plan_records import owner_resume
from metis_check._report import Report
from metis_model.plan import BINDING_FIELDS
from metis_model.plan import action_for
from metis_model.plan import catalog_of
from metis_model.plan import current_signatures
from metis_model.plan import effect_counts
from metis_model.plan._exec import ActKind
from metis_model.plan._exec import ExecState
from metis_model.plan._exec import Outcome
from metis_model.plan._request import canonical_request
from metis_trace import DEFAULT_STEP_CAP
from metis_trace import TERMINAL_TOOL
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
from metis_trace import ToolKind
from metis_trace import TurnHeader
from metis_trace import TurnRecord
from metis_trace import dumps_turn_log
from metis_trace import framework_digest

from ._cex import AblationWitness
from ._cex import CounterexampleFiles
from ._cex import write_counterexample
from ._convert import itf_document
from ._plan import PLAN_ABLATIONS
from ._plan_consent import SymAction
from ._plan_refs import REF_SLOTS
from ._plan_refs import SymFramework
from ._plan_refs import framework_z3
from ._plan_turn import TurnSystem
from ._plan_turn_bmc import TurnPath
from ._plan_turn_bmc import turn_bmc

__all__ = ["PlanCounterexample", "find_plan_counterexample"]

_SCHEMA = object_schema({"path": "string", "text": "string"}, ("path",))
CATALOG: tuple[ExecutorInfo, ...] = (
    ExecutorInfo(
        name="read_note",
        digest="sha256:read-note-1",
        effect=ToolKind.READ_ONLY,
        family="notes.read",
        args_schema=_SCHEMA,
        paths=("path",),
    ),
    ExecutorInfo(
        name="write_note",
        digest="sha256:write-note-1",
        effect=ToolKind.EDIT,
        family="notes.write",
        args_schema=_SCHEMA,
        paths=("path",),
        destination="path",
    ),
)
_BY_NAME = catalog_of(CATALOG)


@attrs.frozen
class PlanCounterexample(AblationWitness):
    ablation: str
    invariant: str
    header: TurnHeader
    records: tuple[TurnRecord, ...]
    report: Report
    states: tuple[dict[str, Any], ...]  # the abstract states, for ITF
    depth: int  # steps of the path (1 for a decision's witness)

    def to_json(self) -> dict[str, object]:
        return self.summary(records=len(self.records))

    def write(self, out_dir: Any) -> CounterexampleFiles:
        text = dumps_turn_log(self.header, self.records)
        itf = itf_document(
            f"ablation {self.ablation}",
            "metis plan model; the abstract states of the counterexample",
            sorted({k for st in self.states for k in st if k != "#meta"}),
            [{"#meta": {"index": i}, **st} for i, st in enumerate(self.states)],
        )
        return write_counterexample(
            out_dir, self.name, text, itf, record_graph(self), _regression(self, text)
        )


def record_graph(cex: PlanCounterexample) -> graphviz.Digraph:
    """The turn log drawn as `metis draw` draws it, the violating record in red."""
    from metis_check import turn_log_figure

    return figure_graph(turn_log_figure(cex.header, cex.records, cex.report.first))


def _regression(cex: PlanCounterexample, text: str) -> str:
    return cex.regression_file(
        text,
        "turn",
        f". Replays the turn\nlog through `check_turn_log` and expects {cex.invariant} "
        f"at record {cex.first_index}.",
        "from metis_model.plan import check_turn_log\nfrom metis_trace import read_turn_log",
        "    header, records, _ = read_turn_log(LINES)\n"
        "    report = check_turn_log(header, records)",
    )


# --- building the turn --------------------------------------------------------------


def _header(request: str, mode: Mode = Mode.ACCEPT_EDITS) -> TurnHeader:
    return TurnHeader(
        turn_id="cex-turn",
        owner="alice",
        actor="alice",
        channel="cli",
        conversation="cex",
        request=request,
        canonical=canonical_request(request),
        runtime={"turn_id": "cex-turn", "owner": "alice"},
        mode=mode,
        route=Route.INTERACTIVE,
        cap=DEFAULT_STEP_CAP,
        epoch=1,
        producer="metis counterexample",
    )


def _fw(*steps: FrameworkStep, fillers: dict[str, Filler] | None = None) -> Framework:
    return Framework(steps=(*steps, FrameworkStep(tool=TERMINAL_TOOL)), fillers=fillers or {})


def _final(steps: Sequence[StepRecord], state: FinalState) -> FinalRecord:
    return FinalRecord(state=state, answer=f"turn {state.value}", effects=effect_counts(steps))


_ENGINE = PathRecord(path=PlanPath.ENGINE, outcome=ProbeOutcome.USED)


def _opening(
    fw: Framework, probe: PathRecord = _ENGINE, source: PlanPath = PlanPath.ENGINE
) -> list[TurnRecord]:
    """How every counterexample turn begins: the catalog, the path taken, its framework."""
    return [
        CatalogRecord(segment=1, executors=CATALOG),
        probe,
        FrameworkRecord(source=source, attempt=0, framework=fw, valid=True),
    ]


def _turn_from_path(path: TurnPath, ablation: str) -> tuple[TurnHeader, list[TurnRecord]]:
    slots = path.states[0].slots
    steps = [
        FrameworkStep(
            tool="write_note" if s.mutating else "read_note",
            args={"path": f"notes/n{i + 1}.md", **({"text": "x"} if s.mutating else {})},
        )
        for i, s in enumerate(slots)
    ]
    fw = _fw(*steps)
    paths = " and ".join(f"notes/n{i + 1}.md" for i in range(len(slots)))
    h = _header(f"Update {paths} with x")
    records = _opening(fw)
    attempt, segment = 0, 1
    ran: list[StepRecord] = []
    failed_class = ErrorClass.WRONG_ARGS
    for act, before in zip(path.acts, path.states, strict=False):
        if act.kind is ActKind.RUN:
            step = steps[act.slot]
            status = {
                Outcome.OK: StepStatus.OK,
                Outcome.STRUCTURAL: StepStatus.ERROR,
                Outcome.OPERATIONAL: StepStatus.ERROR,
            }.get(act.outcome, StepStatus.ERROR)
            cls = None
            if act.outcome is Outcome.STRUCTURAL:
                cls = failed_class = ErrorClass.WRONG_ARGS
            elif act.outcome is Outcome.OPERATIONAL:
                cls = failed_class = ErrorClass.OPERATIONAL
            rec = StepRecord(
                attempt=attempt,
                index=act.slot + 1,
                tool=step.tool,
                segment=segment,
                raw_args=step.args,
                resolved_args=step.args,
                origins={"path": "request", **({"text": "request"} if "text" in step.args else {})},
                effect=_BY_NAME[step.tool].effect,
                occ=f"{segment}.{len(ran)}",
                decision=Decision.ALLOW,
                status=status,
                committed=act.commit and before.slots[act.slot].mutating,
                error_class=cls,
                error="" if cls is None else f"{cls.value}: the executor failed",
                output={"ok": True} if status is StepStatus.OK else None,
            )
            records.append(rec)
            ran.append(rec)
        elif act.kind is ActKind.PAUSE:
            records.append(
                PauseRecord(
                    dialog="cex-dialog",
                    reason=PauseKind.NEEDS_INPUTS,
                    attempt=attempt,
                    step=_next(before) + 1,
                    missing=("note",),
                )
            )
        elif act.kind is ActKind.RESUME:
            segment += 1
            finished = [
                i + 1 for i, s in enumerate(before.slots) if s.status.value in ("done", "skipped")
            ]
            committed = [
                i + 1 for i, s in enumerate(before.slots) if s.committed and i + 1 in finished
            ]
            forgot = ablation == "resume-repeats-mutation"  # the weakened runtime forgot them
            records.append(
                owner_resume(
                    h,
                    dialog="cex-dialog",
                    answer=ResumeAnswer.INPUT,
                    inputs={"note": "x"},
                    segment=segment,
                    done=() if forgot else tuple(finished),
                    committed=() if forgot else tuple(committed),
                )
            )
        elif act.kind is ActKind.RECOVER:
            failed = next((r.index for r in reversed(ran) if r.status is StepStatus.ERROR), None)
            records.append(
                RecoveryRecord(
                    after_step=failed, error_class=failed_class, committed_before=before.committed
                )
            )
            attempt = 1
            records.append(
                FrameworkRecord(source=PlanPath.RECOVERY, attempt=1, framework=fw, valid=True)
            )
        elif act.kind is ActKind.END:
            records.append(_final(ran, FinalState.COMPLETED))
    return h, records


def _next(s: ExecState) -> int:
    return next((i for i, x in enumerate(s.slots) if x.status.value == "pending"), 0)


def _state_json(s: ExecState) -> dict[str, Any]:
    return {
        "phase": s.phase.value,
        "failure": s.failure.value,
        "committed": {"#bigint": str(s.committed)},
        "recoveries": {"#bigint": str(s.recoveries)},
        "slots": [
            {
                "mutating": x.mutating,
                "status": x.status.value,
                "committed": x.committed,
                "runs": {"#bigint": str(x.runs)},
                "repeated": x.repeated,
            }
            for x in s.slots
        ],
    }


def _wrote(path: str, **fields: Any) -> StepRecord:
    """The turn's one step: write_note, as the request asked, committed at `path`."""
    return StepRecord(
        attempt=0,
        index=1,
        tool="write_note",
        origins={"path": "request", "text": "request"},
        effect=ToolKind.EDIT,
        occ="1.0",
        status=StepStatus.OK,
        committed=True,
        output={"path": path},
        **fields,
    )


def _cache_turn(ablation: str) -> tuple[TurnHeader, list[TurnRecord], dict[str, Any]]:
    """An L0 hit that the weakened cache decision serves and the spec refuses."""
    grounded = ablation != "cache-ignores-grounding"
    path = "notes/summary.md"
    fw = _fw(FrameworkStep(tool="write_note", args={"path": path, "text": "done"}))
    request = f"Write done to {path}" if grounded else "Write done to my summary"
    h = _header(request)
    now = current_signatures(fw, _BY_NAME, h.epoch)
    stored = now
    if ablation == "cache-ignores-signature":
        stored = now.model_copy(
            update={"executors": "sha256:the-executor-before-its-manifest-changed"}
        )
    hit = PathRecord(
        path=PlanPath.L0,
        outcome=ProbeOutcome.HIT,
        entry=h.canonical,
        stored=stored,
        current=now,
        grounded=grounded,
        framework_digest=framework_digest(fw),
        registered_by="an-earlier-turn",
    )
    step = _wrote(
        path,
        segment=1,
        raw_args=fw.steps[0].args,
        resolved_args=fw.steps[0].args,
        decision=Decision.ALLOW,
    )
    records: list[TurnRecord] = [
        *_opening(fw, hit, PlanPath.L0),
        step,
        _final([step], FinalState.COMPLETED),
    ]
    state = {
        "stored_executors": stored.executors,
        "current_executors": now.executors,
        "grounded": grounded,
    }
    return h, records, state


def _consent_turn(model: z3.ModelRef) -> tuple[TurnHeader, list[TurnRecord], dict[str, Any]]:
    """Approved with one text, run with another: the weakened binding accepts it."""
    approval, action = SymAction.fresh("approval0."), SymAction.fresh("action.")
    differs = {
        f: model.eval(approval.field(f) != action.field(f), model_completion=True)
        for f in BINDING_FIELDS
    }
    path = "notes/summary.md"
    step_args = {"path": path, "text": "${FILLER:text}"}
    fw = _fw(
        FrameworkStep(tool="write_note", args=step_args),
        fillers={"text": Filler(prompt="What to write")},
    )
    h = _header(f"Write a note to {path}", Mode.DEFAULT)
    executor = _BY_NAME["write_note"]
    first = {"path": path, "text": "draft 1"}
    second = {"path": path, "text": "draft 2"}
    pending = action_for(h.owner, h.turn_id, executor, first)
    step = _wrote(
        path,
        segment=2,
        raw_args=step_args,
        resolved_args=second,
        fillers={"text": "draft 2"},
        decision=Decision.ASK,
        approved=True,
        approval=pending,
        approval_dialog="cex-dialog",
    )
    records: list[TurnRecord] = [
        *_opening(fw),
        PauseRecord(dialog="cex-dialog", reason=PauseKind.ASK, attempt=0, step=1, pending=pending),
        owner_resume(
            h,
            dialog="cex-dialog",
            answer=ResumeAnswer.APPROVE,
            inputs={"text": "draft 2"},
            segment=2,
        ),
        step,
        _final([step], FinalState.COMPLETED),
    ]
    return h, records, {f: z3.is_true(v) for f, v in differs.items()}


def _framework_turn(
    ablation: str, model: z3.ModelRef
) -> tuple[TurnHeader, list[TurnRecord], dict[str, Any]]:
    """A framework the weakened validator accepts: decoded from z3's witness."""
    f = SymFramework.fresh("fw.")
    n = model.eval(f.n, model_completion=True).as_long()
    steps = []
    for i in range(n):
        if z3.is_true(model.eval(f.terminal[i], model_completion=True)):
            steps.append(FrameworkStep(tool=TERMINAL_TOOL))
            continue
        args: dict[str, Any] = {"path": f"notes/n{i + 1}.md"}
        for j in range(REF_SLOTS):
            if z3.is_true(model.eval(f.present[i][j], model_completion=True)):
                target = model.eval(f.target[i][j], model_completion=True).as_long()
                args["path"] = "${step" + str(target) + ".path}"
        steps.append(FrameworkStep(tool="read_note", args=args))
    fw = Framework(steps=tuple(steps))
    h = _header("Read my notes")
    if ablation == "cap-from-proposer":
        cap = model.eval(z3.Int("cap.current"), model_completion=True).as_long()
        h = h.model_copy(update={"cap": max(1, min(cap, h.hard_max))})
    records: list[TurnRecord] = [
        *_opening(fw),
        _final([], FinalState.COMPLETED),
    ]
    return h, records, {"steps": n}


def _witness(ablation: str, inv: str) -> z3.ModelRef:
    """A z3 model of the weakened decision's failure, with the fewest steps."""
    from ._plan import _BY_ID

    solver = z3.Solver()
    if ablation == "references-not-checked":
        # The weakened validator accepts a framework with a reference that is
        # not to an earlier step.
        f = SymFramework.fresh("fw.")
        forward = [
            z3.And(f.active(i), f.present[i][j], z3.Not(f.terminal[i]), f.target[i][j] >= i + 1)
            for i in range(f.slots)
            for j in range(REF_SLOTS)
        ]
        solver.add(framework_z3(f, z3.IntVal(DEFAULT_STEP_CAP), ablation), z3.Or(forward))
        for i in range(f.slots):  # unused reference slots stay empty
            for j in range(REF_SLOTS):
                solver.add(z3.Implies(z3.Not(f.active(i)), z3.Not(f.present[i][j])))
        for n in range(1, f.slots + 1):
            if solver.check(f.n == n) == z3.sat:
                return solver.model()
    claim = _BY_ID[inv].claim
    assert claim is not None
    solver.add(z3.Not(claim(ablation)))
    assert solver.check() == z3.sat, f"{ablation}: the weakened claim holds"
    return solver.model()


def find_plan_counterexample(ablation: str, max_depth: int = 8) -> PlanCounterexample | None:
    """The smallest turn the weakened plan model allows and the checker rejects."""
    inv = PLAN_ABLATIONS[ablation]
    depth = 1
    if ablation in ("resume-repeats-mutation", "recovery-after-commit", "recover-operational"):
        path = turn_bmc(TurnSystem(ablation), inv, max_depth)
        if path is None:
            return None
        h, records = _turn_from_path(path, ablation)
        states = tuple(_state_json(s) for s in path.states)
        depth = len(path.acts)
    elif ablation.startswith("cache-"):
        h, records, state = _cache_turn(ablation)
        states = (state,)
    elif ablation == "consent-not-bound-to-args":
        h, records, state = _consent_turn(_witness(ablation, inv))
        states = (state,)
    else:
        h, records, state = _framework_turn(ablation, _witness(ablation, inv))
        states = (state,)
    report = check_turn_log(h, records, source=f"counterexample for {ablation}")
    return PlanCounterexample(ablation, inv, h, tuple(records), report, states, depth)
