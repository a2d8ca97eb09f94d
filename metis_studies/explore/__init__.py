"""metis explore: model-driven workloads for the real runtime (issue 11).

- `Workload` (`_workload.py`): scripted provider turns, a workspace, settings,
  hooks, child agents, scripted ask answers, a fault schedule, canaries.
- `write_scenario` (`_scenario.py`): a workload as a `metis run` replay scenario.
- `execute` (`_execute.py`): run it in process, as `metis run`, or as a harness
  process, with SIGKILL at a fail point and a resume.
- `check_outcome` (`_checks.py`): every trace and the tree against the model.
- `workloads`, `simulated`, `any_workload` (`_situations.py`, `_pieces.py`):
  the Hypothesis strategies; `situations` (`_coverage.py`): what a run reached.
- `MECH_SWEEP` (`_mech.py`, `_mech_*.py`): the mechanisms' workloads (the
  settings hierarchy, agent definitions, containment, encoded credentials,
  exit records, detached jobs, MCP, the Claude Code hook, the plan path);
  `package_coverage` (`_packages.py`): which runtime package each reached;
- `explore` (`_explore.py`): generate, run, check, shrink;
  `write_divergence` (`_artifacts.py`): scenario, regression, counterexample.
"""

from ._artifacts import write_divergence
from ._checks import Finding, Verdict, check_outcome, read_traces
from ._coverage import REQUIRED, situations
from ._execute import EXECUTIONS, Execution, Outcome, execute
from ._explore import Divergence, Exploration, Stats, explore
from ._harness import RunPaths
from ._mech import MECH_REQUIRED, MECH_SWEEP, Case, mech_sweep
from ._packages import NO_DECISIONS, PACKAGES, PackageRow, package_coverage
from ._scenario import sse_body, write_scenario
from ._situations import (
    SWEEP,
    any_workload,
    kill_points,
    simplest,
    simulated,
    sweep,
    workloads,
)
from ._workload import (
    Call,
    Child,
    Fault,
    Hook,
    Rule,
    Turn,
    Workload,
    WorkloadError,
    parse_workload,
    read_workload,
    workload_from_json,
)

__all__ = [
    "EXECUTIONS",
    "MECH_REQUIRED",
    "MECH_SWEEP",
    "NO_DECISIONS",
    "PACKAGES",
    "REQUIRED",
    "SWEEP",
    "Call",
    "Case",
    "Child",
    "Divergence",
    "Execution",
    "Exploration",
    "Fault",
    "Finding",
    "Hook",
    "Outcome",
    "PackageRow",
    "Rule",
    "RunPaths",
    "Stats",
    "Turn",
    "Verdict",
    "Workload",
    "WorkloadError",
    "any_workload",
    "check_outcome",
    "execute",
    "explore",
    "kill_points",
    "mech_sweep",
    "package_coverage",
    "parse_workload",
    "read_traces",
    "read_workload",
    "simplest",
    "simulated",
    "situations",
    "sse_body",
    "sweep",
    "workload_from_json",
    "workloads",
    "write_divergence",
    "write_scenario",
]
