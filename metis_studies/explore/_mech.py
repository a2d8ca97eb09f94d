"""The mechanisms' workloads: one per situation a runtime mechanism's spec names.

The loop's situations (`_situations.SWEEP`) are drawn from strategies; a
mechanism's are fixed workloads (`Case`), each built from its section of
`specs/` and the IDs it names (`_mech_settings`, `_mech_agents`,
`_mech_files`, `_mech_hidden`, `_mech_shell`, `_mech_loop`, `_mech_mcp`,
`_mech_hook`, `_mech_plan`). Each runs for real (as `metis run`, or as
the processes a `probe` starts), its traces are
checked like every workload's (`_checks.check_outcome`), and a case may
add checks of its own where the workload knows a fact the trace only claims
(the settings files it placed, the definition it wrote, the hook payloads it
sent): each such check reports under the ID of the invariant the wrong fact
would let through. What a case reached is read from the traces and files
the run left (`reached`), never from its script.

`metis explore` runs `MECH_SWEEP` right after the loop's sweep, before
anything is drawn.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from . import _mech_agents
from . import _mech_files
from . import _mech_hidden
from . import _mech_hook
from . import _mech_loop
from . import _mech_mcp
from . import _mech_plan
from . import _mech_settings
from . import _mech_shell
from ._mech_case import Case
from ._mech_case import Problem
from ._mech_case import Traces
from ._workload import Workload

__all__ = [
    "MECH_REQUIRED",
    "MECH_SWEEP",
    "Case",
    "Problem",
    "case_of",
    "mech_problems",
    "mech_situations",
    "mech_sweep",
    "probe_execution",
    "run_probe",
]


def _cases() -> tuple[Case, ...]:
    return (
        *_mech_settings.CASES,
        *_mech_agents.CASES,
        *_mech_files.CASES,
        *_mech_hidden.CASES,
        *_mech_shell.CASES,
        *_mech_loop.CASES,
        *_mech_mcp.CASES,
        *_mech_hook.CASES,
        *_mech_plan.CASES,
    )


MECH_SWEEP: tuple[Case, ...] = _cases()
# Every situation the mechanisms' workloads must reach (as `REQUIRED` for the loop's).
MECH_REQUIRED: tuple[str, ...] = tuple(dict.fromkeys(s for c in MECH_SWEEP for s in c.situations))
_BY_NAME = {f"mech-{c.focus}": c for c in MECH_SWEEP}


def case_of(workload: Workload) -> Case | None:
    return _BY_NAME.get(workload.name)


def mech_sweep() -> list[tuple[str, Workload]]:
    return [(c.focus, c.build()) for c in MECH_SWEEP]


def mech_problems(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    case = case_of(workload)
    return case.check(workload, root, traces) if case is not None else []


def mech_situations(workload: Workload, root: Path | None, traces: Traces) -> Counter[str]:
    case = case_of(workload)
    if case is None or root is None:
        return Counter()
    return case.reached(workload, root, traces)


def probe_execution(workload: Workload) -> str:
    case = case_of(workload)
    return case.execution if case is not None else "process"


def run_probe(workload: Workload, paths: object, timeout: float) -> tuple[list[str], str | None]:
    """Run a `probe` workload with its case's runner."""
    case = case_of(workload)
    root = getattr(paths, "root", None)
    if case is None or case.runner is None or not isinstance(root, Path):
        return [f"probe {workload.probe}"], f"crash: no runner for {workload.name}"
    return case.runner(workload, root, timeout)
