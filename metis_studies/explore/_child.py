"""`python -m metis_studies.explore._child run|resume ROOT`: the harness as a process.

For workloads `metis run` cannot express (hooks, the protocol route, an allow
default): the same in-process harness, in a process of its own that a fail
point can kill. Exit 0 when the run completed, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from metis_trace import RunStatus

from ._harness import RunPaths
from ._harness import build
from ._workload import read_workload


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("run", "resume"):
        print("usage: python -m metis_studies.explore._child run|resume ROOT", file=sys.stderr)
        return 2
    paths = RunPaths(Path(argv[1]))
    workload = read_workload(paths.scenario)
    run = build(workload, paths, resume=argv[0] == "resume")
    try:
        result = asyncio.run(run.go(workload.prompt))
    finally:
        run.close()
    return 0 if result.status is RunStatus.COMPLETED else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
