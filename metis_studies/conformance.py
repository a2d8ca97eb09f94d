"""Conformance studies: the coverage profile of a set of reports, and RQ1's
snapshot conformance of frozen artifacts.

- `coverage_profile(reports)`: for every invariant ID how many times the
  checks evaluated it, and for every transition of the loop (phase x event
  kind, `metis_model.ENABLED`) how many times a trace took it; what was never
  checked or taken. The same profile the pytest plugin prints, as a value.
- `snapshot_conformance(units)`: frozen transcripts and traces (nobody here
  wrote them) checked against the model, counted as the paper counts RQ1:
  leaf pass / fail / skip. A leaf is one evaluation of one invariant in one
  unit: a pass when it held, a fail for each violation, a skip for each
  undecided check and for each invariant the unit's checker applies but never
  evaluated. The coverage profile is the share of the applicable invariants
  that some leaf decided: like the paper's 63.5%, it is not a whole-tree
  certificate. `coverage_of_all` sets the decided IDs against every
invariant of the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

import metis_studies
from metis_check import Report
from metis_check import check_trace
from metis_check.transcripts import check_claude_code_tree
from metis_check.transcripts import check_transcript
from metis_check.transcripts import detect_format
from metis_model import ENABLED
from metis_model import INVARIANTS
from metis_trace import read_trace_numbered

ROOT = Path(metis_studies.__file__).resolve().parent.parent


def all_transitions() -> list[str]:
    return sorted(f"{phase.value}--{kind}" for phase, kinds in ENABLED.items() for kind in kinds)


@attrs.frozen
class CoverageProfile:
    """Per invariant ID the checks, per transition the times taken."""

    reports: int
    invariants: tuple[tuple[str, int], ...]
    transitions: tuple[tuple[str, int], ...]

    @property
    def never_checked(self) -> tuple[str, ...]:
        return tuple(i for i, n in self.invariants if not n)

    @property
    def never_taken(self) -> tuple[str, ...]:
        return tuple(t for t, n in self.transitions if not n)

    @property
    def invariant_share(self) -> float:
        return sum(1 for _, n in self.invariants if n) / max(1, len(self.invariants))

    @property
    def transition_share(self) -> float:
        return sum(1 for _, n in self.transitions if n) / max(1, len(self.transitions))

    def to_json(self) -> dict[str, Any]:
        return {
            "reports": self.reports,
            "invariants": dict(self.invariants),
            "transitions": dict(self.transitions),
            "never_checked": list(self.never_checked),
            "never_taken": list(self.never_taken),
            "invariant_share": self.invariant_share,
            "transition_share": self.transition_share,
        }


def coverage_profile(reports: Iterable[Report]) -> CoverageProfile:
    checks: Counter[str] = Counter()
    taken: Counter[str] = Counter()
    n = 0
    for report in reports:
        n += 1
        checks.update(report.checks)
        taken.update(report.transitions)
    return CoverageProfile(
        reports=n,
        invariants=tuple((inv.id, checks.get(inv.id, 0)) for inv in INVARIANTS),
        transitions=tuple((t, taken.get(t, 0)) for t in all_transitions()),
    )


def check_trace_file(path: Path) -> Report:
    with path.open(encoding="utf-8") as fh:
        header, events, line_of = read_trace_numbered(fh)
    return check_trace(events, header, source=str(path), line_of=line_of)


def trace_reports(folder: Path) -> list[Report]:
    """Every metis trace below `folder` (`*.jsonl` files with a trace header)."""
    out = []
    for path in sorted(folder.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
        if '"metis-trace"' not in first:
            continue
        out.append(check_trace_file(path))
    return out


# --- RQ1: snapshot conformance of frozen artifacts -------------------------------------


@attrs.frozen
class Unit:
    """One frozen artifact: a file, its format (or `auto`) and its companions."""

    path: Path
    format: str = "auto"
    companions: tuple[Path, ...] = ()


@attrs.frozen
class UnitLeaves:
    source: str
    format: str
    verdict: str
    passed: int
    failed: int
    skipped: int
    applicable: tuple[str, ...]
    decided: tuple[str, ...]
    failures: tuple[str, ...]


@attrs.frozen
class SnapshotConformance:
    units: tuple[UnitLeaves, ...]

    @property
    def passed(self) -> int:
        return sum(u.passed for u in self.units)

    @property
    def failed(self) -> int:
        return sum(u.failed for u in self.units)

    @property
    def skipped(self) -> int:
        return sum(u.skipped for u in self.units)

    @property
    def applicable(self) -> tuple[str, ...]:
        return tuple(sorted({i for u in self.units for i in u.applicable}))

    @property
    def decided(self) -> tuple[str, ...]:
        return tuple(sorted({i for u in self.units for i in u.decided}))

    @property
    def coverage(self) -> float:
        """Share of the invariants the checkers apply that some leaf decided."""
        return len(self.decided) / max(1, len(self.applicable))

    @property
    def coverage_of_all(self) -> float:
        """Share of every invariant ID of the model that some leaf decided."""
        return len(self.decided) / len(INVARIANTS)

    def to_json(self) -> dict[str, Any]:
        return {
            "leaves": {"pass": self.passed, "fail": self.failed, "skip": self.skipped},
            "coverage": self.coverage,
            "coverage_of_all": self.coverage_of_all,
            "applicable": list(self.applicable),
            "decided": list(self.decided),
            "units": [attrs.asdict(u) for u in self.units],
        }


def shown(path: str) -> str:
    """A path as results show it: relative to the project, or to its parent
    folder (`shared/...`), so regenerated results do not depend on the checkout."""
    p = Path(path)
    for base in (ROOT, ROOT.parent):
        if p.is_relative_to(base):
            return str(p.relative_to(base))
    return path


def leaves_of(report: Report, fmt: str) -> UnitLeaves:
    failed: Counter[str] = Counter(v.invariant for v in report.violations)
    undecided: Counter[str] = Counter(u.invariant for u in report.undecided)
    applicable = tuple(sorted(set(report.checks) | set(failed) | set(undecided)))
    passed = sum(max(0, n - failed[i]) for i, n in report.checks.items())
    never = sum(1 for i in applicable if not report.checks.get(i) and not failed[i])
    decided = tuple(i for i in applicable if report.checks.get(i) or failed[i])
    return UnitLeaves(
        source=shown(report.source),
        format=report.format or fmt,
        verdict=report.verdict,
        passed=passed,
        failed=sum(failed.values()),
        skipped=sum(undecided.values()) + never,
        applicable=applicable,
        decided=decided,
        failures=tuple(v.one_line() for v in report.violations),
    )


def check_unit(unit: Unit) -> Report:
    text = unit.path.read_text(encoding="utf-8")
    source = str(unit.path)
    if '"metis-trace"' in text.split("\n", 1)[0]:
        return check_trace_file(unit.path)
    fmt = unit.format
    if fmt == "auto":
        fmt, _ = detect_format(text, source)
    if fmt == "claude-code":
        base = unit.path.parent
        companions = {str(c.relative_to(base)): c.read_text("utf-8") for c in unit.companions}
        return check_claude_code_tree(text, companions, source=source)
    return check_transcript(text, fmt, source=source)  # type: ignore[arg-type]


def snapshot_conformance(units: Sequence[Unit]) -> SnapshotConformance:
    out = []
    for unit in units:
        report = check_unit(unit)
        out.append(leaves_of(report, unit.format))
    return SnapshotConformance(tuple(out))


def _claude_code_units(folder: Path) -> list[Unit]:
    units = []
    for session in sorted(folder.glob("*.jsonl")):
        sub = session.with_suffix("") / "subagents"
        companions = tuple(sorted(sub.rglob("agent-*.jsonl"))) if sub.is_dir() else ()
        units.append(Unit(session, "claude-code", companions))
    return units


def frozen_corpus(shared: Path | None = None) -> list[Unit]:
    """The frozen artifacts: the transcripts bundled in tests/data (each
    format's folder) and, when present, the shared corpus of real Claude
    Code sessions (`../shared/corpora/claude-code`)."""
    data = ROOT / "tests" / "data" / "transcripts"
    units = _claude_code_units(data / "claude-code")
    for folder in ("codex", "openai-agents", "otel", "pydantic-ai", "provider-requests"):
        for path in sorted((data / folder).glob("*.json*")):
            units.append(Unit(path, "auto"))
    corpus = (shared or ROOT.parent / "shared") / "corpora" / "claude-code"
    if corpus.is_dir():
        seen = {u.path.name for u in units}
        units += [u for u in _claude_code_units(corpus) if u.path.name not in seen]
    return units
