"""The model's ablations: weaken one guard of the loop protocol, find the
shortest trace it then allows, and confirm that the checker rejects it.

Each ablation of `metis_proofs.ABLATIONS` names the invariant it breaks
(specs/proofs.md). `find_counterexample` searches by iterative deepening
(z3 BMC), so the depth found is the shortest such trace, in events; the
trace is then replayed by `check_trace`, whose first violation must be the
same invariant (`confirmed`). An ablation with no counterexample within the
depth is reported as such, never as a pass.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import attrs

from metis_proofs import ABLATIONS
from metis_proofs import find_counterexample


@attrs.frozen
class AblationResult:
    ablation: str
    invariant: str  # what the ablation is meant to break
    found: bool
    depth: int | None  # events in the shortest counterexample
    calls: int | None
    confirmed: bool  # check_trace's first violation is `invariant`
    checker_says: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.found and self.confirmed

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "ok": self.ok}


def model_ablations(
    names: Iterable[str] | None = None, max_depth: int = 12, *, timeout_s: float = 120.0
) -> tuple[AblationResult, ...]:
    """Each ablation (default: all of them), searched up to `max_depth` events."""
    chosen = list(ABLATIONS) if names is None else list(names)
    unknown = [n for n in chosen if n not in ABLATIONS]
    if unknown:
        raise ValueError(f"unknown ablation {unknown[0]!r} (valid: {', '.join(ABLATIONS)})")
    out = []
    for name in chosen:
        start = time.perf_counter()
        cex = find_counterexample(name, max_depth, timeout_s=timeout_s)
        seconds = time.perf_counter() - start
        if cex is None:
            out.append(AblationResult(name, ABLATIONS[name], False, None, None, False, "", seconds))
            continue
        first = cex.report.first
        calls = sum(len(getattr(e, "calls", ())) for e in cex.events)
        out.append(
            AblationResult(
                ablation=name,
                invariant=ABLATIONS[name],
                found=True,
                depth=cex.depth,
                calls=calls,
                confirmed=cex.confirmed,
                checker_says=first.one_line() if first is not None else "no violation",
                seconds=seconds,
            )
        )
    return tuple(out)
