"""What a run left, checked against the model.

Every `trace.jsonl` under the run folder (the root's and each child's) is
replayed with `check_trace`, and the tree with `check_trace_tree` (CHILD
invariants across it); the witness file against the traces (`check_witness`:
AUTH-1 and RETRY-1, witnessed); every file the run wrote, and its progress
output, for credentials and the planted canaries (`check_run_files`, TRACE-2).
A run that should have ended but did not (a resume that left the trace
open), and a crash or hang the executor saw, are findings too, with the
pseudo-IDs `RUN` and `FORMAT` (a trace the reader refuses): they are not
invariants of the model and never count as caught by one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_check import Report
from metis_check import WitnessedTrace
from metis_check import check_run_files
from metis_check import check_trace_tree
from metis_check import check_witness
from metis_trace import HookRun
from metis_trace import TraceEvent
from metis_trace import TraceFormatError
from metis_trace import TraceHeader
from metis_trace import read_trace_numbered
from metis_trace import read_witness

from ._execute import Outcome
from ._wire import SENT
from ._wire import sent_problems

NOT_AN_ID = ("RUN", "FORMAT")


@attrs.frozen
class Finding:
    """One divergence: the invariant ID (or RUN / FORMAT) and where."""

    invariant: str
    message: str
    trace: str = ""
    line: int | None = None
    index: int | None = None

    @property
    def is_invariant(self) -> bool:
        return self.invariant not in NOT_AN_ID

    def one_line(self) -> str:
        where = f"{self.trace}:{self.line}: " if self.trace and self.line else ""
        return f"{self.invariant}: {where}{self.message}"


@attrs.frozen
class Verdict:
    outcome: Outcome
    findings: tuple[Finding, ...]
    report: Report | None
    traces: dict[str, tuple[TraceHeader, list[TraceEvent]]]
    lines: dict[str, list[int]]

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def first(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    @property
    def events(self) -> int:
        return self.report.events if self.report is not None else 0


def read_traces(
    run_dir: Path,
) -> tuple[dict[str, tuple[TraceHeader, list[TraceEvent]]], dict[str, list[int]], list[Finding]]:
    traces: dict[str, tuple[TraceHeader, list[TraceEvent]]] = {}
    lines: dict[str, list[int]] = {}
    problems: list[Finding] = []
    for path in sorted(run_dir.rglob("trace.jsonl")):
        name = str(path.relative_to(run_dir))
        try:
            with path.open(encoding="utf-8") as fh:
                header, events, line_of = read_trace_numbered(fh)
        except TraceFormatError as exc:
            problems.append(Finding("FORMAT", exc.message, name, exc.line))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Finding("FORMAT", f"cannot read: {exc}", name))
            continue
        traces[name] = (header, events)
        lines[name] = list(line_of)
    return traces, lines, problems


def _unended(traces: dict[str, tuple[TraceHeader, list[TraceEvent]]]) -> list[Finding]:
    out = []
    for name, (_, events) in traces.items():
        if not events or events[-1].kind != "run_end":
            last = events[-1].kind if events else "the header"
            out.append(Finding("RUN", f"the run never ended (last event: {last})", name))
    return out


def _witnessed(
    outcome: Outcome, traces: dict[str, tuple[TraceHeader, list[TraceEvent]]]
) -> list[Finding]:
    """The witness file against the traces (AUTH-1, RETRY-1, witnessed)."""
    path = outcome.paths.witness
    if not path.exists() or not traces:
        return []
    name = path.name
    try:
        with path.open(encoding="utf-8") as fh:
            sessions = read_witness(fh)
    except TraceFormatError as exc:
        return [Finding("FORMAT", exc.message, name, exc.line)]
    except (OSError, UnicodeDecodeError) as exc:
        return [Finding("FORMAT", f"cannot read: {exc}", name)]
    order = sorted(traces, key=lambda n: (traces[n][0].depth, n))  # the root first
    witnessed = [WitnessedTrace(n, *traces[n]) for n in order]
    report = check_witness(sessions, witnessed, source=str(path))
    return [
        Finding(v.invariant, f"witnessed: {v.message}", name, v.witness_line, v.index)
        for v in report.violations
    ]


def run_files(outcome: Outcome) -> list[Path]:
    """The files the run wrote: everything under its folder but the children's
    workspaces (`worktrees/`), and its progress output (stderr of each process)."""
    paths = outcome.paths
    found = [
        p for p in paths.run_dir.rglob("*") if "worktrees" not in p.relative_to(paths.run_dir).parts
    ]
    found += [paths.root / n for n in ("run.log", "resume.log", "resume-2.log")]
    return sorted(p for p in found if p.is_file() and not p.is_symlink())


def _credentials(outcome: Outcome) -> list[Finding]:
    """TRACE-2: no file the run wrote holds a credential, the planted canaries
    (which the workload knows exactly) above all."""
    root = outcome.paths.root
    files = [
        (str(p.relative_to(root)), p.read_text(encoding="utf-8", errors="replace"))
        for p in run_files(outcome)
    ]
    report = check_run_files(files, outcome.workload.canaries, source=str(root))
    return [Finding(v.invariant, v.message, "", v.line, v.index) for v in report.violations]


def _mechanism(
    outcome: Outcome, traces: dict[str, tuple[TraceHeader, list[TraceEvent]]]
) -> list[Finding]:
    """A mechanism workload's own checks (`_mech.py`): facts it placed, which
    the trace must show as placed."""
    from ._mech import mech_problems

    return [
        Finding(invariant, message, name)
        for invariant, message, name in mech_problems(outcome.workload, outcome.paths.root, traces)
    ]


def _hooks_known(outcome: Outcome, traces: Mapping[str, Any]) -> list[Finding]:
    """CHILD-6 from what the workload knows: a hook whose command exits 2 or
    1 (a guard that failed) vetoes, so its run recorded as passing means the
    call went through a guard that said no."""
    vetoing = {h.id: h.exit_status for h in outcome.workload.hooks if h.exit_status}
    out: list[Finding] = []
    for name, (_, events) in traces.items():
        for e in events:
            if isinstance(e, HookRun) and e.hook in vetoing and not e.vetoed:
                message = (
                    f"hook {e.hook} exits {vetoing[e.hook]}, which vetoes; its run on"
                    f" {e.occ} is recorded as passing"
                )
                out.append(Finding("CHILD-6", message, name, None, e.seq))
    return out


def _repeated(outcome: Outcome) -> set[str]:
    """Call ids the workload's own script gives more than once."""
    ids = Counter(c.id for t in outcome.workload.turns for c in t.calls)
    return {i for i, n in ids.items() if n > 1}


def _line(lines: Sequence[int], index: int) -> int | None:
    return lines[index] if 0 <= index < len(lines) else None


def check_outcome(outcome: Outcome) -> Verdict:
    traces, lines, findings = read_traces(outcome.paths.run_dir)
    report: Report | None = None
    if outcome.paths.trace.exists() or traces:
        report = check_trace_tree(traces, source=str(outcome.paths.run_dir))
        for v in report.violations:
            name, _, message = v.message.partition(": ")
            if name not in traces:
                name, message = "", v.message
            line = _line(lines.get(name, []), v.index) if name else None
            findings.append(Finding(v.invariant, message, name, line, v.index))
    elif outcome.workload.probe is None:  # a probe's files are its case's to check
        findings.append(Finding("RUN", "the run wrote no trace"))
    findings += _witnessed(outcome, traces)
    findings += _credentials(outcome)
    findings += _mechanism(outcome, traces)
    findings += _hooks_known(outcome, traces)
    findings += [
        Finding(i, m, SENT) for i, m in sent_problems(outcome.paths.root, _repeated(outcome))
    ]
    if outcome.problem is not None:
        findings.append(Finding("RUN", outcome.problem))
    elif not [f for f in findings if f.is_invariant]:
        findings.extend(_unended(traces))
    return Verdict(outcome, tuple(findings), report, traces, lines)
