"""What a check returns: a report with its first divergence, as a value."""

from __future__ import annotations

from typing import Any

import attrs


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
        if self.witness_line is not None:
            out["witnessed"] = True
            out["witness_line"] = self.witness_line
        return out

    def one_line(self) -> str:
        if self.witness_line is not None:
            where = f"witness line {self.witness_line}"
            return f"{self.invariant} (witnessed) at {where}: {self.message}"
        where = f"line {self.line}" if self.line is not None else f"event {self.index}"
        return f"{self.invariant} at {where}: {self.message}"


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

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ok": self.ok,
            "events": self.events,
            "violations": [v.to_json() for v in self.violations],
            "checks": dict(sorted(self.checks.items())),
            "transitions": dict(sorted(self.transitions.items())),
        }
