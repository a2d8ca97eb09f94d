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
from ._checks import Finding
from ._checks import Verdict
from ._checks import check_outcome
from ._checks import read_traces
from ._coverage import REQUIRED
from ._coverage import situations
from ._execute import EXECUTIONS
from ._execute import Execution
from ._execute import Outcome
from ._execute import execute
from ._explore import Divergence
from ._explore import Exploration
from ._explore import Stats
from ._explore import explore
from ._harness import RunPaths
from ._mech import MECH_REQUIRED
from ._mech import MECH_SWEEP
from ._mech import Case
from ._mech import mech_sweep
from ._packages import NO_DECISIONS
from ._packages import PACKAGES
from ._packages import PackageRow
from ._packages import package_coverage
from ._scenario import sse_body
from ._scenario import write_scenario
from ._situations import SWEEP
from ._situations import any_workload
from ._situations import kill_points
from ._situations import simplest
from ._situations import simulated
from ._situations import sweep
from ._situations import workloads
from ._workload import Call
from ._workload import Child
from ._workload import Fault
from ._workload import Hook
from ._workload import Rule
from ._workload import Turn
from ._workload import Workload
from ._workload import WorkloadError
from ._workload import parse_workload
from ._workload import read_workload
from ._workload import workload_from_json

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
