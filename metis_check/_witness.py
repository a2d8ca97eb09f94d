"""`check_witness`: the witness file against the traces of a run (specs/witness.md).

The trace is the runtime's log; the witness saw effects from outside. Each
witnessed change must be explained by an admitted effect: a call occurrence
allowed (or its ask approved) whose execution interval `[effect_start,
effect_end]` (a Background call's until `job_done`; an effect cut by a kill,
until the next `resume`) overlaps the change's window and whose footprint
may touch the path. A Read-only call touches nothing; an Edit with a file key
(`file:<path>`) touches that path, its atomic-write temp siblings and the
folders made for it; any other Edit, and every Exec call, may touch anything.
An unexplained change breaks AUTH-1, or RETRY-1 when it repeats, after a
resume, an effect that had committed before it. A `bash -c CMD` execution
is matched by its command to the bash calls: each admitted occurrence
explains one execution in its interval.

Verdicts are sound for the windows: a change is flagged only when its whole
window lies inside the run and outside every interval that could explain it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

import attrs

from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import Change
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectStart
from metis_trace import Exec
from metis_trace import JobDone
from metis_trace import Lost
from metis_trace import Request
from metis_trace import Result
from metis_trace import Resume
from metis_trace import RunEnd
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import WitnessSession

from ._report import Violation
from ._witness_exits import check_exits
from ._witness_signals import check_signals

EXEC_SLACK = 0.005  # seconds: strace stamps in real time, converted to monotonic
EPS = 2e-6  # seconds: both files round to microseconds
_CLEANUP_OPS = frozenset({"delete", "delete_self", "moved_from", "move_self"})
_SHELLS = frozenset({"bash", "sh"})


@attrs.frozen
class WitnessedTrace:
    """One trace of the run's tree (the root, or a child agent's)."""

    source: str
    header: TraceHeader
    events: Sequence[TraceEvent]


@attrs.frozen
class WitnessReport:
    """What the witness showed: violations (each with its witness line),
    what was checked, and what could not be (`unobserved`)."""

    source: str
    changes: int
    execs: int
    violations: tuple[Violation, ...] = ()
    checks: dict[str, int] = attrs.field(factory=dict)
    unobserved: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ok": self.ok,
            "changes": self.changes,
            "execs": self.execs,
            "violations": [v.to_json() for v in self.violations],
            "checks": dict(sorted(self.checks.items())),
            "unobserved": list(self.unobserved),
        }


@attrs.define
class _Occ:
    trace: str
    occ: str
    tool: str
    input: dict[str, Any]
    decision_seq: int = -1
    decision_t: float = 0.0
    kind: ToolKind = ToolKind.EXEC
    key: str | None = None
    admitted: bool = False
    start: float | None = None
    end: float | None = None
    committed_at: float | None = None
    batch_end: float = float("inf")
    status: str = ""
    # What the trace says the call's process came to (TRACE-3): a Background
    # call's `job_done` outcome, else its result's status; and that event's seq.
    outcome: str = ""
    outcome_seq: int = -1

    def touches(self, path: str) -> bool:
        if self.kind in (ToolKind.READ_ONLY, ToolKind.PLAN_CONTROL):
            return False
        if self.kind is ToolKind.EXEC or not (self.key or "").startswith("file:"):
            return True
        target = (self.key or "")[5:]
        if path == target or target.startswith(path.rstrip("/") + "/"):
            return True  # the file, or a folder made for it
        head, base = posixpath.split(target)
        name = posixpath.basename(path)
        return posixpath.dirname(path) == head and name.startswith(f".{base}.")

    def overlaps(self, lo: float, hi: float) -> bool:
        end = self.end if self.end is not None else float("inf")
        return self.start is not None and self.start - EPS <= hi and lo <= end + EPS


@attrs.define
class _Trace:
    source: str
    header: TraceHeader
    origin: float | None
    occs: dict[str, _Occ]
    resumes: list[float]
    times: list[float]
    first: float
    last: float
    ended: float | None
    events: Sequence[TraceEvent] = ()


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _fold(t: WitnessedTrace, boot: str | None) -> _Trace:
    """A trace's occurrences with their decisions, intervals and batches."""
    clock = t.header.meta.get("clock")
    origin = None
    if isinstance(clock, dict) and clock.get("boot_id") == boot and boot is not None:
        raw = clock.get("origin")
        origin = float(raw) if isinstance(raw, int | float) else None
    occs: dict[str, _Occ] = {}
    resumes: list[float] = []
    open_batch: list[_Occ] = []
    ended = None
    for e in t.events:
        if isinstance(e, Assistant):
            for c in e.calls:
                occs[c.occ] = _Occ(t.source, c.occ, c.tool, dict(c.input))
        elif isinstance(e, DecisionEvent) and e.occ in occs:
            o = occs[e.occ]
            o.decision_seq, o.decision_t = e.seq, e.t
            o.kind, o.key = e.facts.kind, e.key
            o.admitted = e.decision is Decision.ALLOW
            open_batch.append(o)
        elif isinstance(e, AskResolved) and e.occ in occs:
            occs[e.occ].admitted = e.approved
        elif isinstance(e, EffectStart) and e.occ in occs:
            occs[e.occ].start = e.t
        elif isinstance(e, EffectEnd | JobDone) and e.occ in occs:
            o = occs[e.occ]
            o.end = e.t if o.end is None else max(o.end, e.t)
            if isinstance(e, EffectEnd) and e.committed:
                o.committed_at = e.t
            if isinstance(e, JobDone):
                o.outcome, o.outcome_seq = e.outcome.value, e.seq
        elif isinstance(e, Result) and e.occ in occs:
            o = occs[e.occ]
            o.status = e.status.value
            if o.outcome_seq < 0:  # a job's handshake result is not its outcome
                o.outcome, o.outcome_seq = e.status.value, e.seq
        elif isinstance(e, Request | Resume | RunEnd):
            for o in open_batch:
                o.batch_end = min(o.batch_end, e.t)
            open_batch = []
            if isinstance(e, Resume):
                resumes.append(e.t)
                for o in occs.values():  # an effect cut by the kill ended by now
                    if o.start is not None and o.end is None:
                        o.end = e.t
            if isinstance(e, RunEnd):
                ended = e.t
    first = t.events[0].t if t.events else 0.0
    last = t.events[-1].t if t.events else 0.0
    times = [e.t for e in t.events]
    return _Trace(t.source, t.header, origin, occs, resumes, times, first, last, ended, t.events)


class _Checker:
    def __init__(self, sessions: Sequence[WitnessSession], traces: Sequence[WitnessedTrace]):
        boot = sessions[0].header.boot_id if sessions else None
        self.traces = [_fold(t, boot) for t in traces]
        self.root = self.traces[0] if self.traces else None
        self.violations: list[Violation] = []
        self.unobserved: list[str] = []
        self.checks = {"AUTH-1": 0, "RETRY-1": 0}
        self.used: set[tuple[str, str]] = set()  # bash occurrences that explained an exec
        # TRACE-3: the process each explained execution started, per session:
        # (session, pid) -> (trace, occurrence, the exec's line).
        self.session = 0
        self.spawned: dict[tuple[int, int], tuple[_Trace, _Occ, int]] = {}
        for tr in self.traces:
            if tr.origin is None:
                self.unobserved.append(
                    f"{tr.source}: its clock cannot be compared with the witness's "
                    "(no meta.clock, or another boot): its effects are not checked"
                )

    # --- time --------------------------------------------------------------------------

    def window(self, tr: _Trace, lo: float, hi: float) -> tuple[float, float] | None:
        if tr.origin is None:
            return None
        return lo - tr.origin, hi - tr.origin

    def in_run(self, lo: float, hi: float) -> bool:
        """The whole window lies after the root trace began (setup comes before)."""
        if self.root is None or self.root.origin is None:
            return False
        return lo - self.root.origin >= 0.0

    def _resumed_commit(self, tr: _Trace, hi: float, hit: Any) -> _Occ | None:
        """An occurrence matching `hit` that committed before a resume which
        came before `hi`: an unexplained effect seen after that resume (its
        window may reach back before the resume event: the resumed process
        works before it writes it)."""
        for r in tr.resumes:
            if r <= hi:
                for o in tr.occs.values():
                    if o.committed_at is not None and o.committed_at <= r and hit(o):
                        return o
        return None

    def _flag(self, inv: str, line: int, message: str, occ: _Occ | None) -> None:
        self.violations.append(
            Violation(
                invariant=inv,
                index=occ.decision_seq if occ is not None and occ.decision_seq >= 0 else 0,
                message=message,
                witness_line=line,
            )
        )

    # --- changes -----------------------------------------------------------------------

    def change(self, c: Change, line: int) -> None:
        if not self.in_run(c.lo, c.hi):
            return
        placed: list[tuple[_Trace, float, float]] = []
        for tr in self.traces:
            w = self.window(tr, c.lo, c.hi)
            if w is None:
                return  # a trace we cannot place in time could explain it
            placed.append((tr, *w))
        self.checks["AUTH-1"] += 1
        for tr, lo, hi in placed:
            if tr.resumes and hi > tr.resumes[0]:
                self.checks["RETRY-1"] += 1
            if self._cleanup(tr, c, lo) or any(
                o.admitted and o.overlaps(lo, hi) and o.touches(c.path) for o in tr.occs.values()
            ):
                return
        ops = ", ".join(c.ops)
        for tr, _, hi in placed:
            # By path only for a file's footprint: a bash call's is anything, and its
            # re-run is matched by its command (`exec_`).
            again = self._resumed_commit(
                tr, hi, lambda o, p=c.path: (o.key or "").startswith("file:") and o.touches(p)
            )
            if again is not None:
                self._flag(
                    "RETRY-1",
                    line,
                    f"{c.path} changed ({ops}) after the resume, outside every admitted "
                    f"effect: the committed effect of {again.occ} ({again.tool} "
                    f"{_short(again.input)}) in {tr.source} ran again",
                    again,
                )
                return
        suspects = [
            (tr, o)
            for tr, lo, hi in placed
            for o in tr.occs.values()
            if not o.admitted
            and o.decision_seq >= 0
            and o.decision_t <= hi
            and lo <= o.batch_end
            and o.touches(c.path)
        ]
        specific = [s for s in suspects if s[1].kind is ToolKind.EDIT] or suspects
        if specific:
            tr, o = specific[0]
            self._flag(
                "AUTH-1",
                line,
                f"{c.path} changed ({ops}) while no admitted effect could touch it: the "
                f"effect of {o.status or 'unadmitted'} call {o.occ} ({o.tool} "
                f"{_short(o.input)}) in {tr.source}",
                o,
            )
            return
        self._flag(
            "AUTH-1",
            line,
            f"{c.path} changed ({ops}) outside the interval of every admitted effect "
            "that may touch it",
            None,
        )

    def _cleanup(self, tr: _Trace, c: Change, lo: float) -> bool:
        """The runtime removing a child's workspace after the child ended."""
        if tr.header.depth == 0 or self.root is None:
            return False
        home = tr.header.meta.get("workspace")
        if not isinstance(home, str) or home == self.root.header.meta.get("workspace"):
            return False
        return _under(c.path, home) and set(c.ops) <= _CLEANUP_OPS and lo >= tr.last

    # --- process execution ------------------------------------------------------------

    def exec_(self, x: Exec, line: int) -> None:
        command = _shell_command(x)
        if command is None or not x.ok or not self.in_run(x.t - EXEC_SLACK, x.hi):
            return
        matches: list[tuple[_Trace, _Occ, float, float]] = []
        for tr in self.traces:
            w = self.window(tr, x.t - EXEC_SLACK, x.hi)
            if w is None:
                return
            for o in tr.occs.values():
                if o.input.get("command") == command:
                    matches.append((tr, o, *w))
        if not matches:
            return  # not a tool call's command: the runtime's own (git, workers, agents)
        self.checks["AUTH-1"] += 1
        for tr, o, lo, hi in matches:
            if o.admitted and o.overlaps(lo, hi) and (tr.source, o.occ) not in self.used:
                self.used.add((tr.source, o.occ))
                self.spawned[(self.session, x.pid)] = (tr, o, line)
                return
        for tr, o, _, hi in matches:
            self.checks["RETRY-1"] += bool(tr.resumes)
            again = self._resumed_commit(tr, hi, lambda m, o=o: m is o)
            if again is not None:
                self._flag(
                    "RETRY-1",
                    line,
                    f"`{command}` ran again after the resume: {again.occ} in {tr.source} "
                    "had committed before it",
                    again,
                )
                return
        tr, o, _, _ = matches[0]
        if not o.admitted:
            why = f"{o.occ} was not admitted ({o.status or 'no allow'})"
        else:
            why = f"outside the interval of {o.occ}, or more often than it was admitted"
        self._flag("AUTH-1", line, f"`{command}` ran: {why}, in {tr.source}", o)

    # --- coverage -----------------------------------------------------------------------

    def coverage(self, sessions: Sequence[WitnessSession]) -> None:
        for s in sessions:
            for r in s.records:
                if isinstance(r, Lost):
                    until = f"{r.hi:.6f}" if r.hi is not None else "the session's end"
                    self.unobserved.append(
                        f"{r.what}: lost from {r.lo:.6f} to {until} ({r.why})"
                        + (f" under {r.path}" if r.path else "")
                    )
            for u in s.header.not_observed:
                if u.what == "exec":
                    self.unobserved.append(f"session {s.header.session}: exec: {u.why}")
        for tr in self.traces:
            if tr.origin is None:
                continue
            spans = [
                (s.ready - tr.origin, (s.end or s.ready) - tr.origin)
                for s in sessions
                if s.ready is not None
            ]
            bare = [t for t in tr.times if not any(a <= t <= b for a, b in spans)]
            if bare:
                self.unobserved.append(
                    f"{tr.source}: {len(bare)} event(s) from t {bare[0]:.6f} to "
                    f"{bare[-1]:.6f} were written while no witness watched"
                )


def _shell_command(x: Exec) -> str | None:
    argv = x.argv
    if len(argv) >= 3 and posixpath.basename(argv[0]) in _SHELLS and argv[1] == "-c":
        return argv[2]
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_witness(
    sessions: Sequence[WitnessSession],
    traces: Sequence[WitnessedTrace],
    *,
    source: str = "<witness>",
) -> WitnessReport:
    """Check a witness file's sessions against the run's traces (the root first)."""
    checker = _Checker(sessions, traces)
    changes = execs = 0
    for index, s in enumerate(sessions):
        checker.session = index
        for r, line in zip(s.records, s.lines, strict=True):
            if isinstance(r, Change):
                changes += 1
                checker.change(r, line)
            elif isinstance(r, Exec):
                execs += 1
                checker.exec_(r, line)
    checker.coverage(sessions)
    exits = check_exits(sessions, checker.traces, checker.spawned)
    checker.violations.extend(exits.violations)
    checker.unobserved.extend(exits.unobserved)
    if exits.checked:
        checker.checks["TRACE-3"] = exits.checked
    signals = check_signals(sessions, checker.traces, checker.spawned.keys())
    checker.violations.extend(signals.violations)
    checker.unobserved.extend(signals.unobserved)
    if signals.checked:
        checker.checks["TRACE-4"] = signals.checked
    return WitnessReport(
        source=source,
        changes=changes,
        execs=execs,
        violations=tuple(checker.violations),
        checks={k: v for k, v in checker.checks.items() if v},
        unobserved=tuple(checker.unobserved),
    )
