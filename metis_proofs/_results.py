"""Three-valued proof results (CrossHair style), plus refutations."""

from __future__ import annotations

from enum import StrEnum
from typing import Any
from typing import Protocol

import attrs


class Verdict(StrEnum):
    PROVED = "proved"  # holds for every input / at every depth
    BOUNDED = "bounded"  # holds on every path up to `depth` steps
    UNKNOWN = "unknown"  # the solver gave up (timeout): no claim at all
    REFUTED = "refuted"  # a counterexample exists


# What a result may claim, by verdict: its `scope` must begin with one of
# these, so that no row is printed without saying how far its proof reaches.
SCOPE_PREFIX = {
    Verdict.PROVED: "proved for ",
    Verdict.BOUNDED: "bounded to ",
    Verdict.UNKNOWN: "unknown",
    Verdict.REFUTED: "refuted",
}
ALL_INPUTS = "proved for all inputs"
NO_CLAIM = "unknown: no claim (a solver timeout)"


def refuted_scope(what: str) -> str:
    return f"refuted: {what}"


class Named(Protocol):
    """A property as its results and evidence files name it."""

    @property
    def id(self) -> str: ...
    @property
    def invariant(self) -> str: ...
    @property
    def title(self) -> str: ...


@attrs.frozen
class ProofResult:
    """The outcome of one property.

    For loop properties `depth` is the deepest BMC depth with no violation
    (for `refuted`: the depth of the shortest violation) and `k` the k of
    k-induction when that closed the proof; both are None for SMT claims,
    except CHILD-4 (method `smt`), whose ledger invariant is closed by
    k-induction too: `k` is that k (1), `depth` the length of a refuting path.
    """

    prop_id: str
    invariant: str
    method: str  # "smt" | "k-induction" | "bmc"
    verdict: Verdict
    depth: int | None
    seconds: float
    smt2: str | None = None
    detail: str = ""
    witness: str | None = None  # a refuting input or the path to a counterexample
    k: int | None = None
    # How far the claim reaches, e.g. "proved for all widths", "proved for
    # <= 3 calls, ...", "bounded to depth 20 (...)" (see SCOPE_PREFIX).
    scope: str = ""

    def __attrs_post_init__(self) -> None:
        prefix = SCOPE_PREFIX[self.verdict]
        if not self.scope.startswith(prefix):
            raise ValueError(
                f"{self.prop_id}: a {self.verdict.value} result needs a scope starting "
                f"{prefix!r}, got {self.scope!r}"
            )

    @property
    def holds(self) -> bool:
        """True only for `proved` and `bounded`; `unknown` is never a pass."""
        return self.verdict in (Verdict.PROVED, Verdict.BOUNDED)

    @property
    def label(self) -> str:
        if self.verdict is Verdict.BOUNDED:
            return f"bounded({self.depth})"
        return self.verdict.value

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.prop_id,
            "invariant": self.invariant,
            "method": self.method,
            "result": self.label,
            "verdict": self.verdict.value,
            "depth": self.depth,
            "k": self.k,
            "scope": self.scope,
            "seconds": round(self.seconds, 3),
            "smt2": self.smt2,
            "detail": self.detail,
            "witness": self.witness,
        }


def smt_result(
    prop: Named,
    verdict: Verdict,
    depth: int | None,
    seconds: float,
    smt2: str | None,
    detail: str,
    *,
    scope: str,
    witness: str | None = None,
    k: int | None = None,
) -> ProofResult:
    """The result of a claim proved by SMT, under its property's id and invariant."""
    return ProofResult(
        prop.id, prop.invariant, "smt", verdict, depth, seconds, smt2, detail, witness, k, scope
    )
