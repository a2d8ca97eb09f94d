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

The checker's state is in `_plan_check_base.py`; the header and framework
records' checks in `_plan_check_framework.py`, a step's in
`_plan_check_steps.py` and its mediation's in `_plan_check_gate.py`; here,
pause, resume, recovery and the final answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from metis_model.plan._effects import effect_counts
from metis_model.plan._exec import Act
from metis_model.plan._exec import ActKind
from metis_trace import MUTATING_KINDS
from metis_trace import STRUCTURAL
from metis_trace import Assistant
from metis_trace import CacheRecord
from metis_trace import CatalogRecord
from metis_trace import EffectEnd
from metis_trace import FinalRecord
from metis_trace import FrameworkRecord
from metis_trace import PathRecord
from metis_trace import PauseKind
from metis_trace import PauseRecord
from metis_trace import ProbeOutcome
from metis_trace import RecoveryRecord
from metis_trace import ResumeAnswer
from metis_trace import ResumeRecord
from metis_trace import StepRecord
from metis_trace import StepStatus
from metis_trace import TurnHeader
from metis_trace import TurnRecord

from ._plan_check_base import _FINISHED
from ._plan_check_base import Traces
from ._plan_check_framework import _FrameworkChecks
from ._plan_check_steps import _StepChecks
from ._report import Report
from ._report import Violation

__all__ = ["check_turn_log", "check_turn_logs"]


class _Checker(_FrameworkChecks, _StepChecks):
    """One turn's checker: the record checks of every kind."""

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
