"""`metis conform --engine dask [--scheduler ADDRESS]`: the same check on a Dask cluster.

With `--scheduler`, the cluster there (its workers as they are: `--jobs` is
refused, metis does not resize it). Without, a `distributed.LocalCluster` of
`--jobs` worker processes (one thread each: the checks are CPU-bound Python,
so threads would share one GIL; no dashboard: no port opened for it),
started for this check and closed after it, also when the check fails.

The client reads each unit (a file, or a session with its sub-agents' files)
and submits its text, so workers need metis installed but not the files; at
most a few units per worker thread are in flight, so a large corpus is never
held in memory at once. Results come back in input order. Dask distributed
rather than Ray: a pure-Python install (the `dask` extra), a scheduler and
workers that start in seconds on a laptop or a 2-core CI runner
(`distributed.LocalCluster`), and nothing to run besides them.
"""

from __future__ import annotations

import os
from typing import Any

from ._output import bad_input
from ._transcripts import FileResult
from ._transcripts import Unit
from ._transcripts import check_loaded
from ._transcripts import load

IN_FLIGHT_PER_THREAD = 4
CONNECT_TIMEOUT = "METIS_DASK_TIMEOUT"  # seconds to reach the scheduler (default 10)


def run_on_dask(
    units: list[Unit], fmt: str, address: str | None, workers: int = 1
) -> list[FileResult]:
    """The results of `units`, in order, from the cluster at `address`, or
    from a local cluster of `workers` processes (module doc)."""
    try:
        from distributed import LocalCluster
    except ImportError:
        bad_input("--engine dask needs the dask extra: pip install 'metis[dask]'")
    if address is not None:
        return _on_cluster(units, fmt, address)
    try:
        cluster = LocalCluster(
            n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None
        )
    except (OSError, TimeoutError) as exc:
        bad_input(f"--engine dask: cannot start a local cluster of {workers} workers ({exc})")
    with cluster:
        return _on_cluster(units, fmt, cluster)


def _on_cluster(units: list[Unit], fmt: str, address: Any) -> list[FileResult]:
    from distributed import Client
    from distributed import as_completed

    raw = os.environ.get(CONNECT_TIMEOUT, "10")
    try:
        timeout = float(raw)
    except ValueError:
        timeout = float("nan")
    if not 0 < timeout < 3600:
        bad_input(f"{CONNECT_TIMEOUT}={raw!r}: expected seconds between 0 and 3600")
    try:
        client = Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a malformed address
        bad_input(f"--scheduler {address}: cannot connect ({exc})")
    results: dict[int, FileResult] = {}
    with client:
        threads = sum(client.nthreads().values()) or 1
        pending = iter(enumerate(units))
        index_of: dict[Any, int] = {}
        running = as_completed()

        def submit_next() -> None:
            for number, unit in pending:
                future = client.submit(check_loaded, load(unit), fmt, pure=False)
                index_of[future] = number
                running.add(future)
                return

        for _ in range(threads * IN_FLIGHT_PER_THREAD):
            submit_next()
        for future in running:
            try:
                results[index_of.pop(future)] = future.result()
            except Exception as exc:  # a worker died or could not run it: the run is broken
                bad_input(f"--engine dask: a check failed on the cluster ({exc})")
            submit_next()
    return [results[i] for i in range(len(units))]
