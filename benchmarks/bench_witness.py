"""The witness's cost: the same `metis run` with and without `--witness`, side by side.

Two workloads, each a real `metis run` process (replay provider): the
shipped scenario (`edit_files`: list, read, grep, edit, write, bash), and
a heavier one (three batches of 20 writes and 5 bash commands each). Each
round runs both variants in fresh workspaces, in alternating order; the
ratio (witnessed / plain) is taken per round, for wall time and for CPU
time (the processes' user + system time, the witness and strace included).
Recorded: the median ratios. Not a timed gate: the figures go to the README.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.runtime.test_loop_support import write_scenario  # `python -m pytest` runs from the root

ROUNDS = 7


def _heavy(path: Path) -> Path:
    turns: list[list[dict[str, Any]]] = []
    for batch in range(3):
        calls: list[dict[str, Any]] = [
            {
                "tool": "write",
                "id": f"w{batch}_{i}",
                "input": {"path": f"d{batch}/f{i}.txt", "content": "x" * 200},
            }
            for i in range(20)
        ]
        calls += [
            {
                "tool": "bash",
                "id": f"b{batch}_{i}",
                "input": {"command": f"wc -c d{batch}/f{i}.txt"},
            }
            for i in range(5)
        ]
        turns.append(calls)
    turns.append([{"text": "done"}])
    return write_scenario(path, turns)


def _run(tmp: Path, name: str, scenario: str, witnessed: bool) -> tuple[float, float]:
    ws = tmp / f"{name}-ws"
    argv = [
        sys.executable,
        "-m",
        "metis_cli",
        "run",
        "--scenario",
        scenario,
        "--workspace",
        str(ws),
        "--mode",
        "bypassPermissions",
        "--headless",
        "-q",
        "--trace",
        str(tmp / f"{name}-run" / "trace.jsonl"),
    ]
    if witnessed:
        argv.append("--witness")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def test_witness_cost_ratio(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    workloads = {"edit_files": "edit_files", "heavy": str(_heavy(tmp_path / "heavy.yaml"))}
    ratios: dict[str, dict[str, list[float]]] = {
        w: {"wall": [], "cpu": [], "plain_wall": []} for w in workloads
    }
    for r in range(ROUNDS):
        for w, scenario in workloads.items():
            order = (False, True) if r % 2 == 0 else (True, False)
            got = {}
            for witnessed in order:
                got[witnessed] = _run(
                    tmp_path / f"{w}-{r}-{int(witnessed)}", w, scenario, witnessed
                )
            ratios[w]["wall"].append(got[True][0] / got[False][0])
            ratios[w]["cpu"].append(got[True][1] / got[False][1])
            ratios[w]["plain_wall"].append(got[False][0])
    for w, values in ratios.items():
        for what in ("wall", "cpu"):
            benchmark.extra_info[f"{w} {what} ratio (median)"] = round(
                statistics.median(values[what]), 3
            )
        benchmark.extra_info[f"{w} plain wall s (median)"] = round(
            statistics.median(values["plain_wall"]), 3
        )
    benchmark.pedantic(
        _run, args=(tmp_path / "last", "edit_files", "edit_files", True), rounds=1, iterations=1
    )
    assert all(v > 0 for w in ratios.values() for v in w["wall"])
