"""The dispatch pairs: four-class mediation against forced serialization on
real-I/O batches (the paper's RQ2), with paired statistics and the bounds.

`dispatch_study(batches, pairs)` runs each batch (`BATCHES`: `cpu`,
`shell-grep`, `io`) and returns a `DispatchStudy` of `BatchResult`s.
"""

from ._batches import BATCHES
from ._batches import CPU_BATCH
from ._batches import IO_BATCH
from ._batches import SHELL_GREP_BATCH
from ._batches import seed_tree
from ._run import DispatchError
from ._run import durations
from ._run import forced_chain
from ._run import io_run
from ._run import io_run_async
from ._study import TARGET_MAKESPAN
from ._study import TARGET_RATIO
from ._study import BatchResult
from ._study import Bounds
from ._study import DispatchStudy
from ._study import dispatch_study
from ._study import run_batch

__all__ = [
    "BATCHES",
    "CPU_BATCH",
    "IO_BATCH",
    "SHELL_GREP_BATCH",
    "TARGET_MAKESPAN",
    "TARGET_RATIO",
    "BatchResult",
    "Bounds",
    "DispatchError",
    "DispatchStudy",
    "dispatch_study",
    "durations",
    "forced_chain",
    "io_run",
    "io_run_async",
    "run_batch",
    "seed_tree",
]
