"""The studies by name, and the sizes they run at."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from ._conformance import write_coverage
from ._conformance import write_read_marker
from ._conformance import write_snapshot
from ._dispatch import write_dispatch
from ._files import Written
from ._model import write_model_ablations
from ._model import write_permission_modes
from ._runtime import write_child_boundary
from ._runtime import write_faults
from ._runtime import write_oracle


@attrs.frozen
class Sizes:
    """How much each study runs: dispatch pairs, child-boundary seeds, oracle
    examples per route, simulated model runs, Read-marker trials, and which
    model ablations (None: all)."""

    pairs: int = 30
    seeds: int = 5
    examples: int = 100
    runs: int = 200
    trials: int = 3
    ablations: tuple[str, ...] | None = None

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            pairs=3, seeds=1, examples=3, runs=10, trials=1, ablations=("child-gate-not-cloned",)
        )


STUDIES: dict[str, Callable[[Path, Sizes], Written]] = {
    "faults": lambda out, s: write_faults(out),
    "oracle": lambda out, s: write_oracle(out, s.examples),
    "child-boundary": lambda out, s: write_child_boundary(out, s.seeds),
    "dispatch": lambda out, s: write_dispatch(out, s.pairs),
    "permission-modes": lambda out, s: write_permission_modes(out),
    "model-ablations": lambda out, s: write_model_ablations(
        out, list(s.ablations) if s.ablations is not None else None
    ),
    "coverage": lambda out, s: write_coverage(out, s.runs),
    "snapshot": lambda out, s: write_snapshot(out),
    "read-marker": lambda out, s: write_read_marker(out, s.trials),
}


def write_study(name: str, out: Path, sizes: Sizes | None = None) -> Written:
    """Run study `name` and write its files into `out/name/`."""
    return STUDIES[name](out / name, sizes or Sizes())
