"""A step record against the model's resolution and execution state.

The step is one of the stored plan's with its raw arguments (PLAN-13); it
reads only completed steps (PLAN-2); its resolution, refusal, condition and
empty input are the model's (PLAN-13, PLAN-14, PLAN-3); it runs again only as
the model allows (PLAN-4, PLAN-6); its mediation is checked
(`_plan_check_gate.py`); and its outcome advances the execution state.
"""

from __future__ import annotations

from typing import Any

from metis_model.plan._exec import Act
from metis_model.plan._exec import ActKind
from metis_model.plan._exec import Outcome
from metis_model.plan._refs import Resolution
from metis_model.plan._refs import ResolveContext
from metis_model.plan._refs import condition_holds
from metis_model.plan._refs import output_origin
from metis_model.plan._refs import resolve_step
from metis_model.plan._refs import step_refs
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import StepRecord
from metis_trace import StepStatus

from ._plan_check_base import _FINISHED
from ._plan_check_base import _RAN
from ._plan_check_base import _Attempt
from ._plan_check_base import _redacted
from ._plan_check_gate import _GateChecks

_OUTCOME = {
    StepStatus.OK: Outcome.OK,
    StepStatus.SKIPPED_EMPTY: Outcome.SKIP,
    StepStatus.SKIPPED_CONDITION: Outcome.SKIP,
    StepStatus.DENIED: Outcome.DENIED,
    StepStatus.REFUSED: Outcome.STRUCTURAL,
}


class _StepChecks(_GateChecks):
    """The checks of a step record."""

    def step_record(self, r: StepRecord) -> None:
        a = self.attempt
        self.checks["PLAN-1"] += 1
        if a is None or r.attempt != a.framework.attempt:
            self.fail("PLAN-1", f"step {r.index} of no validated framework")
            return
        if not a.framework.valid:
            self.fail("PLAN-1", f"step {r.index} of a framework that failed validation")
            return
        steps = a.framework.framework.steps
        if not 1 <= r.index < len(steps) or steps[r.index - 1].tool != r.tool:
            self.fail("PLAN-13", f"step {r.index} ({r.tool}) is not a step of the stored plan")
            return
        stored = steps[r.index - 1]
        self.expect(
            "PLAN-13",
            r.raw_args == stored.args,
            f"step {r.index}: its raw arguments are not the stored plan's",
        )
        executor = self.catalog.get(r.tool)
        if executor is None:
            self.fail("PLAN-1", f"step {r.index}: {r.tool} is not in the catalog")
            return
        before = a.status.get(r.index)
        self._rerun(r, before)
        ctx = ResolveContext(
            outputs={k: v for k, v in a.outputs.items() if k < r.index},
            origins=a.origins,
            runtime=self.h.runtime,
            fillers={**self._defaults(a), **self.inputs, **r.fillers},
            targets=self.h.targets,
        )
        self._references(r, stored, a)
        res = resolve_step(stored, r.index, executor, ctx)
        ran = r.status in _RAN
        if res.failure is not None:
            cls, message = res.failure
            inv = (
                "PLAN-14"
                if cls is ErrorClass.OUT_OF_SCOPE and "holds data" in message
                else "PLAN-13"
            )
            self.expect(
                inv,
                r.status is StepStatus.REFUSED,
                f"step {r.index} {r.status.value}, but resolution refuses it: {message}",
            )
        elif res.missing:
            self.expect(
                "PLAN-13",
                not ran,
                f"step {r.index} ran without fillers {', '.join(res.missing)}",
            )
        else:
            if r.status is not StepStatus.REFUSED and not _redacted(r.resolved_args):
                self.expect(
                    "PLAN-13",
                    r.resolved_args == res.args,
                    f"step {r.index}: resolved arguments are not the model's resolution",
                )
                self.expect(
                    "PLAN-14",
                    r.origins == res.origins,
                    f"step {r.index}: data origins {r.origins} are not {res.origins}",
                )
            holds = condition_holds(stored, ctx.outputs)
            self.expect(
                "PLAN-13",
                holds or r.status is StepStatus.SKIPPED_CONDITION,
                f"step {r.index} {r.status.value} though its condition is false",
            )
            self.expect(
                "PLAN-3",
                not holds
                or not res.empty
                or (r.status is StepStatus.SKIPPED_EMPTY and not r.committed),
                f"step {r.index} ({r.tool}) consumes an empty collection but is {r.status.value}",
            )
        if ran or r.status is StepStatus.DENIED:
            self._mediation(r, executor)
        self._record_exec(r, executor, res.origins, a)

    def _defaults(self, a: _Attempt) -> dict[str, str]:
        fillers = a.framework.framework.fillers
        return {k: f.default for k, f in fillers.items() if f.default is not None}

    def _rerun(self, r: StepRecord, before: StepStatus | None) -> None:
        if before is None or r.status not in _RAN:
            return
        a = self.attempt
        assert a is not None and self.exec is not None
        if before in _FINISHED:
            self.fail("PLAN-6", f"step {r.index} ran again after it was done")
        elif self.exec.committed:
            self.fail("PLAN-4", f"step {r.index} retried after an effect committed")

    def _references(self, r: StepRecord, stored: Any, a: _Attempt) -> None:
        for ref in step_refs(stored):
            if ref.step is None:
                continue
            self.expect(
                "PLAN-2",
                ref.step < r.index and a.status.get(ref.step) in _FINISHED,
                f"step {r.index} reads step {ref.step}, which had not completed",
            )

    def _record_exec(
        self, r: StepRecord, executor: ExecutorInfo, origins: dict[str, str], a: _Attempt
    ) -> None:
        a.status[r.index] = r.status
        if r.status is StepStatus.OK:
            a.outputs[r.index] = r.output
        elif r.status in (StepStatus.SKIPPED_EMPTY, StepStatus.SKIPPED_CONDITION):
            a.outputs[r.index] = None
        if r.status is StepStatus.OK or r.status in _FINISHED:
            a.origins[r.index] = output_origin(
                executor, Resolution(r.resolved_args, origins, (), {})
            )
        if r.committed:
            a.committed.add(r.index)
        self.steps.append(r)
        if r.status is StepStatus.ERROR:
            operational = r.error_class is ErrorClass.OPERATIONAL
            outcome = Outcome.OPERATIONAL if operational else Outcome.STRUCTURAL
        else:
            outcome = _OUTCOME[r.status]
        slots = self.exec.slots if self.exec is not None else ()
        if 1 <= r.index <= len(slots):
            self.advance(Act(ActKind.RUN, r.index - 1, outcome, r.committed))
