"""A mechanism's workload (`_mech.py`): what it runs, what it checks, what it reaches."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import attrs

from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._workload import Workload

__all__ = ["Case", "Check", "Problem", "Reached", "Runner", "Traces"]

Traces = Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]]
Problem = tuple[str, str, str]  # (invariant ID, message, file)
Check = Callable[[Workload, Path, Traces], list[Problem]]
Reached = Callable[[Workload, Path, Traces], Counter[str]]
Runner = Callable[[Workload, Path, float], tuple[list[str], str | None]]


def _nothing(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    return []


@attrs.frozen
class Case:
    """One mechanism workload: `focus` names it (`mech-<focus>` is the
    workload's name), `package` the runtime package it drives, `situations`
    what its trace must show (`reached`), `check` its own checks."""

    focus: str
    package: str
    situations: tuple[str, ...]
    build: Callable[[], Workload]
    reached: Reached
    check: Check = _nothing
    runner: Runner | None = None  # a `probe` workload's runner
    # How its runner runs it (`Outcome.execution`); for a case without a
    # runner, "in-process" says it must be run so (what it reads is kept there).
    execution: str = "process"
