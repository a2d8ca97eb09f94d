"""Checking a turn log against the plan model (`metis conform TURN.jsonl`).

`check_turn_log` replays the records of one turn in order. It recomputes from
the model what the runtime recorded: validation (`validate`), the cache
signatures and grounding (`current_signatures`, `grounded`, `probe`),
every step's resolution (`resolve_step`), the action an approval must be
bound to (`action_for`), the execution state (`_exec.observe`, `bad`) and
the effect counts; each disagreement is a violation with its PLAN ID. Given
the traces of the turn's segments it also checks that every step that ran is
a call of the trace that the gate admitted (PLAN-1), and that the committed
effects the final answer counts are the trace's (PLAN-11).

`check_turn_logs` checks several turns together: a hit's stored signatures
and framework are the ones the registering turn recorded (PLAN-7, PLAN-13),
and every turn id is new (PLAN-10).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs

from metis_model.plan._cache import current_signatures
from metis_model.plan._cache import grounded
from metis_model.plan._cache import probe
from metis_model.plan._catalog import catalog_of
from metis_model.plan._consent import action_for
from metis_model.plan._consent import authorizes
from metis_model.plan._effects import effect_counts
from metis_model.plan._exec import Act
from metis_model.plan._exec import ActKind
from metis_model.plan._exec import ExecState
from metis_model.plan._exec import Failure
from metis_model.plan._exec import Outcome
from metis_model.plan._exec import bad
from metis_model.plan._exec import initial_exec
from metis_model.plan._exec import observe
from metis_model.plan._refs import Resolution
from metis_model.plan._refs import ResolveContext
from metis_model.plan._refs import condition_holds
from metis_model.plan._refs import output_origin
from metis_model.plan._refs import resolve_step
from metis_model.plan._refs import step_refs
from metis_model.plan._request import canonical_request
from metis_model.plan._validate import effective_cap
from metis_model.plan._validate import validate_tagged
from metis_trace import HARD_STEP_MAX
from metis_trace import MUTATING_KINDS
from metis_trace import STRUCTURAL
from metis_trace import TERMINAL_TOOL
from metis_trace import Action
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CacheRecord
from metis_trace import CatalogRecord
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectStart
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import FinalRecord
from metis_trace import FrameworkRecord
from metis_trace import MissReason
from metis_trace import PathRecord
from metis_trace import PauseKind
from metis_trace import PauseRecord
from metis_trace import PlanPath
from metis_trace import ProbeOutcome
from metis_trace import RecoveryRecord
from metis_trace import ResumeAnswer
from metis_trace import ResumeRecord
from metis_trace import Route
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnHeader
from metis_trace import TurnRecord
from metis_trace import framework_digest

from ._report import Report
from ._report import Violation

__all__ = ["PLAN_CHECKS", "check_turn_log", "check_turn_logs"]

PLAN_CHECKS = tuple(f"PLAN-{n}" for n in range(1, 15))
Traces = Mapping[int, tuple[TraceHeader, Sequence[TraceEvent]]]
_RAN = (StepStatus.OK, StepStatus.ERROR)
_FINISHED = (StepStatus.OK, StepStatus.SKIPPED_EMPTY, StepStatus.SKIPPED_CONDITION)
_OUTCOME = {
    StepStatus.OK: Outcome.OK,
    StepStatus.SKIPPED_EMPTY: Outcome.SKIP,
    StepStatus.SKIPPED_CONDITION: Outcome.SKIP,
    StepStatus.DENIED: Outcome.DENIED,
    StepStatus.REFUSED: Outcome.STRUCTURAL,
}
# A validation failure of these checks is about references, or the cap.
_CHECK_ID = {"reference": "PLAN-2", "cap": "PLAN-12"}


@attrs.define
class _Attempt:
    framework: FrameworkRecord
    outputs: dict[int, Any] = attrs.field(factory=dict)
    origins: dict[int, str] = attrs.field(factory=dict)
    status: dict[int, StepStatus] = attrs.field(factory=dict)
    committed: set[int] = attrs.field(factory=set)
    hit: PathRecord | None = None


class _Checker:
    def __init__(
        self,
        header: TurnHeader,
        source: str,
        line_of: Sequence[int] | None,
        traces: Traces | None,
    ) -> None:
        self.h = header
        self.source = source
        self.line_of = line_of
        self.traces = traces
        self.violations: list[Violation] = []
        self.checks: Counter[str] = Counter()
        self.catalog: dict[str, ExecutorInfo] = {}
        self.segment = 1
        self.attempt: _Attempt | None = None
        self.exec: ExecState | None = None
        self.reported_bad: set[str] = set()
        self.hits: list[PathRecord] = []
        self.pauses: dict[str, PauseRecord] = {}
        self.granted: dict[str, Action] = {}
        self.used: set[str] = set()
        self.inputs: dict[str, str] = {}
        self.recoveries = 0
        self.steps: list[StepRecord] = []
        self.occs: dict[int, set[str]] = {}
        self.index = 0

    # --- reporting -------------------------------------------------------------

    def fail(self, inv: str, message: str) -> None:
        line = self.line_of[self.index] if self.line_of is not None else None
        self.violations.append(Violation(inv, self.index, message, line=line))

    def expect(self, inv: str, ok: bool, message: str) -> None:
        self.checks[inv] += 1
        if not ok:
            self.fail(inv, message)

    def advance(self, act: Act) -> None:
        if self.exec is None:
            return
        self.exec = observe(self.exec, act)
        for inv in PLAN_CHECKS:
            if inv in ("PLAN-4", "PLAN-5", "PLAN-6"):
                self.checks[inv] += 1
        for inv in bad(self.exec):
            if inv not in self.reported_bad:
                self.reported_bad.add(inv)
                self.fail(inv, _BAD_MESSAGE[inv])

    # --- records --------------------------------------------------------------

    def header(self) -> None:
        h = self.h
        self.expect(
            "PLAN-12",
            h.hard_max == HARD_STEP_MAX and 1 <= h.cap <= h.hard_max,
            f"the turn's step cap {h.cap} (hard maximum {h.hard_max}) is above {HARD_STEP_MAX}",
        )
        if h.task is not None:
            t = h.task
            self.expect(
                "PLAN-10",
                (h.owner, h.channel, h.mode, h.actor, h.route)
                == (t.owner, t.channel, t.mode, "scheduler", Route.BACKGROUND),
                f"task {t.id} of {t.owner} ({t.channel}, {t.mode}) fired as {h.owner} "
                f"({h.channel}, {h.mode}, actor {h.actor}, route {h.route})",
            )

    def catalog_record(self, r: CatalogRecord) -> None:
        self.catalog = catalog_of(r.executors)

    def path_record(self, r: PathRecord) -> None:
        if r.outcome is ProbeOutcome.HIT:
            self.hits.append(r)
        if r.path is PlanPath.L0 and r.entry is not None:
            self.expect(
                "PLAN-7",
                r.entry == self.h.canonical == canonical_request(self.h.request),
                f"L0 entry {r.entry!r} is not this request's canonical form "
                f"{canonical_request(self.h.request)!r}",
            )

    def framework_record(self, r: FrameworkRecord) -> None:
        h = self.h
        expected_attempt = 0 if self.attempt is None else 1
        self.expect(
            "PLAN-4",
            r.attempt == expected_attempt and r.attempt <= self.recoveries,
            f"framework attempt {r.attempt} without a recovery before it",
        )
        tagged = validate_tagged(r.framework, self.catalog, h.cap)
        if r.valid and tagged:
            check, first = tagged[0]
            self.fail(
                _CHECK_ID.get(check, "PLAN-1"), f"accepted, but the model finds: {first.message}"
            )
        self.expect(
            "PLAN-1",
            r.valid or bool(tagged),
            "the runtime refused a framework the model accepts",
        )
        body = sum(1 for s in r.framework.steps if s.tool != TERMINAL_TOOL)
        if r.valid:
            self.expect(
                "PLAN-12",
                body <= effective_cap(h.cap),
                f"{body} steps run under a cap of {effective_cap(h.cap)}",
            )
        attempt = _Attempt(r)
        if r.source in (PlanPath.L0, PlanPath.L1):
            attempt.hit = self._check_hit(r)
        self.attempt = attempt
        mutating = [
            (self.catalog[s.tool].effect in MUTATING_KINDS) if s.tool in self.catalog else False
            for s in r.framework.steps
            if s.tool != TERMINAL_TOOL
        ]
        if self.exec is None:
            self.exec = initial_exec(mutating)
        else:
            self.exec = attrs.evolve(self.exec, slots=initial_exec(mutating).slots)
        if not r.valid:
            self.exec = attrs.evolve(self.exec, failure=Failure.STRUCTURAL)

    def _check_hit(self, r: FrameworkRecord) -> PathRecord | None:
        hit = next((p for p in reversed(self.hits) if p.path is r.source), None)
        self.expect("PLAN-7", hit is not None, f"a cached {r.source} plan used without a hit")
        if hit is None:
            return None
        now = current_signatures(r.framework, self.catalog, self.h.epoch)
        is_grounded = grounded(r.framework, self.catalog, self.h.request, self.h.targets)
        self.expect(
            "PLAN-7",
            hit.current == now,
            "the hit's current signatures are not the catalog's "
            f"(recorded {hit.current}, catalog {now})",
        )
        reason = (
            probe(hit.stored, now, grounded=is_grounded, path=r.source, champion=hit.champion)
            if hit.stored is not None
            else None
        )
        self.expect("PLAN-7", hit.stored is not None, "a hit without stored signatures")
        if reason is not None:
            inv = "PLAN-8" if reason is MissReason.NOT_GROUNDED else "PLAN-7"
            self.fail(inv, f"served from {r.source}, but the entry is a miss: {reason.value}")
        else:
            self.checks["PLAN-8"] += 1
        self.expect(
            "PLAN-8",
            hit.grounded == is_grounded,
            f"grounding recorded as {hit.grounded}, the model finds {is_grounded}",
        )
        self.expect(
            "PLAN-13",
            hit.framework_digest == framework_digest(r.framework),
            "the cached framework changed: its digest is not the stored one",
        )
        return hit

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

    def _mediation(self, r: StepRecord, executor: ExecutorInfo) -> None:
        admitted = r.decision is Decision.ALLOW or (
            r.decision is Decision.ASK and r.approved is True
        )
        if r.status in _RAN:
            self.expect(
                "PLAN-1",
                admitted and r.occ is not None,
                f"step {r.index} ran without the gate's allow or an approved ask",
            )
        else:
            self.expect(
                "PLAN-1",
                r.decision is Decision.DENY or (r.decision is Decision.ASK and r.approved is False),
                f"step {r.index} denied without a deny or a rejected ask",
            )
        if r.decision is Decision.ASK and r.approved:
            self._approval(r, executor)
        if r.occ is not None:
            self.occs.setdefault(r.segment, set()).add(r.occ)
            self._against_trace(r)

    def _approval(self, r: StepRecord, executor: ExecutorInfo) -> None:
        args = r.resolved_args or {}
        action = action_for(self.h.owner, self.h.turn_id, executor, args)
        if _redacted(args) and r.approval is not None:
            # A credential in the arguments was redacted in the log: their digest
            # cannot be recomputed here; every other field is still compared.
            action = action.model_copy(update={"args_digest": r.approval.args_digest})
        dialog = r.approval_dialog
        granted = self.granted.get(dialog) if dialog is not None else None
        ok = (
            r.approval is not None
            and granted is not None
            and granted == r.approval
            and authorizes(r.approval, action, used=dialog in self.used)
        )
        self.expect(
            "PLAN-9",
            ok,
            f"step {r.index}: its ask was approved, but no unused approval granted in this "
            f"turn is bound to {action.tool} with these arguments and destination",
        )
        if dialog is not None:
            self.used.add(dialog)

    def _against_trace(self, r: StepRecord) -> None:
        if self.traces is None or r.segment not in self.traces:
            return
        _, events = self.traces[r.segment]
        occ = r.occ
        call = next(
            (c for e in events if isinstance(e, Assistant) for c in e.calls if c.occ == occ), None
        )
        decision = next((e for e in events if isinstance(e, DecisionEvent) and e.occ == occ), None)
        started = any(isinstance(e, EffectStart) and e.occ == occ for e in events)
        answer = next((e for e in events if isinstance(e, AskResolved) and e.occ == occ), None)
        self.expect(
            "PLAN-1",
            call is not None and call.tool == r.tool and call.input == r.resolved_args,
            f"step {r.index}: the trace has no call {occ} of {r.tool} with its resolved arguments",
        )
        self.expect(
            "PLAN-1",
            decision is not None and decision.decision is r.decision,
            f"step {r.index}: the trace's decision for {occ} is not {r.decision}",
        )
        if r.status in _RAN:
            approved = decision is not None and (
                decision.decision is Decision.ALLOW
                or (answer is not None and answer.approved and answer.resolver == "user")
            )
            self.expect(
                "PLAN-1",
                approved and started,
                f"step {r.index}: {occ} started without an allow or a user's approval in the trace",
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

    def pause_record(self, r: PauseRecord) -> None:
        self.pauses[r.dialog] = r
        if r.reason is PauseKind.ASK:
            p = r.pending
            self.expect(
                "PLAN-9",
                p is not None and p.owner == self.h.owner and p.turn == self.h.turn_id,
                f"dialog {r.dialog}: the pending action is not bound to this turn and owner",
            )
        self.advance(Act(ActKind.PAUSE))

    def resume_record(self, r: ResumeRecord) -> None:
        pause = self.pauses.get(r.dialog)
        self.expect("PLAN-9", pause is not None, f"resume of dialog {r.dialog}, never paused with")
        self.expect(
            "PLAN-9",
            r.owner == self.h.owner,
            f"dialog {r.dialog} of {self.h.owner} answered by {r.owner}",
        )
        a = self.attempt
        if a is not None:
            done = {i for i, s in a.status.items() if s in _FINISHED}
            self.expect(
                "PLAN-6",
                set(r.done) == done and set(r.committed) == a.committed & done,
                f"resume rebuilt steps {sorted(r.done)} (committed {sorted(r.committed)}) as done; "
                f"the turn had done {sorted(done)} (committed {sorted(a.committed & done)})",
            )
        if pause is not None and r.answer is ResumeAnswer.APPROVE and pause.pending is not None:
            self.granted[r.dialog] = pause.pending
        self.inputs.update(r.inputs)
        self.segment = r.segment
        self.advance(Act(ActKind.RESUME))

    def recovery_record(self, r: RecoveryRecord) -> None:
        self.recoveries += 1
        committed = self.exec.committed if self.exec is not None else 0
        self.expect(
            "PLAN-4",
            r.committed_before == committed,
            f"recovery says {r.committed_before} effects had committed; the turn had {committed}",
        )
        self.expect(
            "PLAN-5",
            r.error_class in STRUCTURAL,
            f"an {r.error_class.value} failure recovered by another plan",
        )
        self.advance(Act(ActKind.RECOVER))

    def final_record(self, r: FinalRecord) -> None:
        e, want = r.effects, effect_counts(self.steps)
        self.expect(
            "PLAN-11",
            (e.committed, e.mutations, dict(e.by_tool))
            == (want.committed, want.mutations, want.by_tool),
            f"the answer counts {e.committed} committed effects ({e.mutations} mutations); "
            f"the steps committed {want.committed} ({want.mutations})",
        )
        a = self.attempt
        last = {
            s.index: s for s in self.steps if a is not None and s.attempt == a.framework.attempt
        }
        for n in r.claims:
            s = last.get(n)
            self.expect(
                "PLAN-11",
                s is not None
                and s.status is StepStatus.OK
                and (s.committed or s.effect not in MUTATING_KINDS),
                f"the answer claims step {n}, which did not succeed"
                + ("" if s is None else f" ({s.status.value}, committed {s.committed})"),
            )
        if self.traces is not None:
            traced = sum(
                1
                for _, events in self.traces.values()
                for ev in events
                if isinstance(ev, EffectEnd) and ev.committed
            )
            self.expect(
                "PLAN-11",
                traced == e.committed,
                f"the traces commit {traced} effects; the answer counts {e.committed}",
            )
            for segment, (_, events) in self.traces.items():
                calls = {c.occ for ev in events if isinstance(ev, Assistant) for c in ev.calls}
                extra = calls - self.occs.get(segment, set())
                self.expect(
                    "PLAN-1",
                    not extra,
                    f"segment {segment}'s trace has calls that are no step: {sorted(extra)}",
                )
        self.advance(Act(ActKind.END))


REDACTED = "[REDACTED]"


def _redacted(value: Any) -> bool:
    """Whether the log redacted a credential somewhere in `value`."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, dict):
        return any(_redacted(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_redacted(v) for v in value)
    return False


_BAD_MESSAGE = {
    "PLAN-4": "recovery after an effect committed, or a second recovery",
    "PLAN-5": "an operational failure recovered by another plan",
    "PLAN-6": "a committed mutation ran again",
}


# The check of each kind of record; a CacheRecord is checked across turns
# (`check_turn_logs`).
_READERS: Mapping[type, Callable[[_Checker, Any], None]] = {
    CatalogRecord: _Checker.catalog_record,
    PathRecord: _Checker.path_record,
    FrameworkRecord: _Checker.framework_record,
    StepRecord: _Checker.step_record,
    PauseRecord: _Checker.pause_record,
    ResumeRecord: _Checker.resume_record,
    RecoveryRecord: _Checker.recovery_record,
    FinalRecord: _Checker.final_record,
}


def check_turn_log(
    header: TurnHeader,
    records: Sequence[TurnRecord],
    *,
    source: str = "<turn log>",
    line_of: Sequence[int] | None = None,
    traces: Traces | None = None,
) -> Report:
    """Replay one turn's records against the plan model (module docstring)."""
    c = _Checker(header, source, line_of, traces)
    c.header()
    for i, record in enumerate(records):
        c.index = i
        read = _READERS.get(type(record))
        if read is not None:
            read(c, record)
    violations = sorted(c.violations, key=lambda v: v.index)
    return Report(source, len(records), tuple(violations), dict(c.checks))


TurnLogs = Mapping[str, tuple[TurnHeader, Sequence[TurnRecord]]]


def check_turn_logs(logs: TurnLogs, *, source: str = "<turn logs>") -> Report:
    """What only several turns show: each hit's stored entry is the one its
    registering turn recorded, and turn ids are unique."""
    violations: list[Violation] = []
    checks: Counter[str] = Counter()
    ids = Counter(h.turn_id for h, _ in logs.values())
    stored: dict[tuple[str, str], CacheRecord] = {}
    for name, (h, records) in logs.items():
        checks["PLAN-10"] += 1
        if ids[h.turn_id] > 1:
            violations.append(Violation("PLAN-10", 0, f"{name}: turn id {h.turn_id} is not new"))
        for r in records:
            if isinstance(r, CacheRecord):
                stored[(h.turn_id, r.entry)] = r
    for name, (_, records) in logs.items():
        for i, r in enumerate(records):
            if not (isinstance(r, PathRecord) and r.outcome is ProbeOutcome.HIT):
                continue
            if r.registered_by is None or r.entry is None:
                continue
            entry = stored.get((r.registered_by, r.entry))
            if entry is None:
                continue  # registered by a turn not given here
            for inv, same, what in (
                (
                    "PLAN-7",
                    entry.signatures == r.stored,
                    "the hit's stored signatures are not what",
                ),
                (
                    "PLAN-13",
                    entry.framework_digest == r.framework_digest,
                    "the cached framework is not the one",
                ),
            ):
                checks[inv] += 1
                if not same:
                    message = f"{name}: {what} turn {r.registered_by} stored"
                    violations.append(Violation(inv, i, message))
    return Report(source, len(logs), tuple(violations), dict(checks))
