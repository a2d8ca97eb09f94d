"""metis explore: model-driven workloads for the real runtime (issue 11).

- `Workload` (`_workload.py`): scripted provider turns, a workspace, settings,
  hooks, child agents, scripted ask answers, a fault schedule, canaries.
- `write_scenario` (`_scenario.py`): a workload as a `metis run` replay scenario.
- `execute` (`_execute.py`): run it in process, as `metis run`, or as a harness
  process, with SIGKILL at a fail point and a resume.
- `check_outcome` (`_checks.py`): every trace and the tree against the model.
"""

from ._checks import Finding, Verdict, check_outcome, read_traces
from ._execute import EXECUTIONS, Execution, Outcome, execute
from ._harness import RunPaths
from ._scenario import sse_body, write_scenario
from ._workload import (
    Call,
    Child,
    Fault,
    Hook,
    Rule,
    Turn,
    Workload,
    WorkloadError,
    read_workload,
    workload_from_json,
)

__all__ = [
    "EXECUTIONS",
    "Call",
    "Child",
    "Execution",
    "Fault",
    "Finding",
    "Hook",
    "Outcome",
    "Rule",
    "RunPaths",
    "Turn",
    "Verdict",
    "Workload",
    "WorkloadError",
    "check_outcome",
    "execute",
    "read_traces",
    "read_workload",
    "sse_body",
    "workload_from_json",
    "write_scenario",
]
