"""What a check returns: a report with its first divergence, as a value.

A report's verdict is three-valued: `conforms`, `violates`, or `undetermined`
(nothing broken, but some check could not be decided from the input alone: a
slice of a longer session, or a live one that ends on an open call). An
undetermined check is never reported as held.
"""

from __future__ import annotations

from typing import Any
from typing import Literal

import attrs

Verdict = Literal["conforms", "violates", "undetermined"]
# Why a check could not be decided; each is one a user may allow in CI.
Status = Literal["open-at-end", "outside-slice"]
STATUSES: tuple[Status, ...] = ("open-at-end", "outside-slice")


@attrs.frozen
class Violation:
    """One broken invariant, with the evidence that shows it.

    `index` is the event's `seq` (or the record index of a transcript);
    `line` is the 1-based line of the file, when the input came from one.
    `slice` holds the indices of the fewest events that explain the violation.
    """

    invariant: str
    index: int
    message: str
    line: int | None = None
    state: str = ""
    slice: tuple[int, ...] = ()
    # The provider rule it breaks (specs/closure.md), for a transcript: "ANT-5", ...
    rule: str = ""
    witness_line: int | None = None  # set when a witness file showed it (specs/witness.md)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "invariant": self.invariant,
            "index": self.index,
            "line": self.line,
            "message": self.message,
            "state": self.state,
            "slice": list(self.slice),
        }
        if self.rule:
            out["rule"] = self.rule
        if self.witness_line is not None:
            out["witnessed"] = True
            out["witness_line"] = self.witness_line
        return out

    @property
    def cited(self) -> str:
        """The invariant ID, with the provider rule when there is one: `CLOSE-9 (ANT-5)`."""
        return f"{self.invariant} ({self.rule})" if self.rule else self.invariant

    def one_line(self) -> str:
        if self.witness_line is not None:
            where = f"witness line {self.witness_line}"
            return f"{self.invariant} (witnessed) at {where}: {self.message}"
        where = f"line {self.line}" if self.line is not None else f"event {self.index}"
        return f"{self.cited} at {where}: {self.message}"


@attrs.frozen
class Undecided:
    """A check the input cannot decide: why (`status`), which invariant, and where."""

    status: Status
    invariant: str
    index: int
    message: str
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "invariant": self.invariant,
            "index": self.index,
            "line": self.line,
            "message": self.message,
        }

    def one_line(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"record {self.index}"
        return f"{self.status} ({self.invariant}) at {where}: {self.message}"


@attrs.frozen
class Note:
    """Something the reader repaired or did not check, worth a warning (not a failure)."""

    line: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}

    def one_line(self) -> str:
        return f"line {self.line}: {self.message}" if self.line is not None else self.message


@attrs.frozen
class Report:
    """The outcome of checking one trace or transcript.

    `checks` counts, per invariant ID, how many times it was evaluated, so a
    report says what it actually exercised (an ID with 0 checks proved nothing).
    """

    source: str
    events: int
    violations: tuple[Violation, ...] = ()
    checks: dict[str, int] = attrs.field(factory=dict)
    transitions: dict[str, int] = attrs.field(factory=dict)
    undecided: tuple[Undecided, ...] = ()
    notes: tuple[Note, ...] = ()
    format: str = ""  # the input's format, for a transcript

    @property
    def verdict(self) -> Verdict:
        if self.violations:
            return "violates"
        return "undetermined" if self.undecided else "conforms"

    @property
    def ok(self) -> bool:
        """Everything was checked and held (an undetermined report is not ok)."""
        return self.verdict == "conforms"

    def passes(self, allowed: frozenset[str] = frozenset()) -> bool:
        """No violation, and every undecided check has a status in `allowed`."""
        return not self.violations and all(u.status in allowed for u in self.undecided)

    @property
    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source}
        if self.format:
            out["format"] = self.format
        out.update(
            {
                "verdict": self.verdict,
                "ok": self.ok,
                "events": self.events,
                "violations": [v.to_json() for v in self.violations],
                "undecided": [u.to_json() for u in self.undecided],
                "warnings": [n.to_json() for n in self.notes],
                "checks": dict(sorted(self.checks.items())),
                "transitions": dict(sorted(self.transitions.items())),
            }
        )
        return out
