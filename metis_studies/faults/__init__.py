"""The fault matrix, run against the real runtime (specs/closure.md).

Each row drives `AgentLoop` with a scripted (or replayed) provider, the real
tools in a temporary workspace, the production permission gate and a real
trace file and journal, injects one fault, and states what must come of it:

- the closure: every call occurrence's one terminal result (`interrupted`
  or `unknown` for a repair stub), and how the run ended; one-to-one means each
  occurrence has exactly one, observed from the trace, which must also pass
  `metis_model.check_trace`;
- the effects: side effects counted on disk (lines appended to `log.txt`
  by each call, files written or rolled back), so a duplicated or lost
  effect shows as a wrong count.

`run_fault_matrix(workdir, dispatcher)` returns one `FaultRow` per row of
`FAULTS`; `metis faults` and `metis study faults` print and write them.
"""

from ._harness import DISPATCHERS
from ._harness import RECORDED_STREAM
from ._harness import ExplodeTool
from ._harness import FaultRow
from ._harness import Harness
from ._harness import MultiWriteTool
from ._harness import closure_of
from ._kill import killed_child
from ._matrix import FAULTS
from ._matrix import run_fault
from ._matrix import run_fault_matrix
from ._rows import cut_stream_cassette

__all__ = [
    "DISPATCHERS",
    "FAULTS",
    "RECORDED_STREAM",
    "ExplodeTool",
    "FaultRow",
    "Harness",
    "MultiWriteTool",
    "closure_of",
    "cut_stream_cassette",
    "killed_child",
    "run_fault",
    "run_fault_matrix",
]
