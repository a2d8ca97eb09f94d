"""The dispatch pairs: four-class mediation against forced serialization on
real-I/O batches (the paper's RQ2), with paired statistics and the bounds.

`dispatch_study(batches, pairs)` runs each batch (`BATCHES`: `cpu`,
`shell-grep`, `io`) and returns a `DispatchStudy` of `BatchResult`s.
"""

from ._batches import BATCHES, CPU_BATCH, IO_BATCH, SHELL_GREP_BATCH, seed_tree
from ._run import DispatchError, durations, forced_chain, io_run, io_run_async
from ._study import (
    TARGET_MAKESPAN,
    TARGET_RATIO,
    BatchResult,
    Bounds,
    DispatchStudy,
    dispatch_study,
    run_batch,
)

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
