"""Corpus scale: `metis conform DIR --jobs N`, sessions per second per core, and the speedup.

The corpus is real Claude Code sessions: the three checked-in ones (one with
its sub-agents) copied 40 times each, plus the five 3 MB sessions of the shared
corpus when it is beside the repo, so 120 or 125 sessions. Each worker count
runs the whole command end to end (process start, pool, reading, checking,
the aggregate report), interleaved over rounds; the median is kept.
Recorded: seconds, sessions/s, sessions/s per worker, and the speedup over
one worker, at 1, 2 and N = the machine's cores (when N > 2); also the CPU
seconds of the command and its workers, so sessions per CPU-second (the
per-core throughput) holds even on a loaded machine, and the load average.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "tests" / "data" / "transcripts" / "claude-code"
SHARED = ROOT.parent / "shared" / "corpora" / "claude-code"
COPIES = 40
ROUNDS = 3


def _corpus(folder: Path) -> int:
    count = 0
    for n in range(COPIES):
        for name in ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"):
            target = folder / f"{n:03d}-{name}"
            shutil.copyfile(SESSIONS / name, target)
            count += 1
        shutil.copytree(SESSIONS / "subagents", folder / f"{n:03d}-subagent" / "subagents")
    for big in sorted(SHARED.glob("*.jsonl")) if SHARED.is_dir() else []:
        if big.stat().st_size > 1_000_000:
            shutil.copyfile(big, folder / big.name)
            count += 1
    return count


CPU: dict[int, list[float]] = {}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(folder: Path, jobs: int) -> float:
    argv = [sys.executable, "-m", "metis_cli", "conform", "--format", "claude-code", str(folder)]
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run([*argv, "--jobs", str(jobs)], capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    CPU.setdefault(jobs, []).append(_cpu() - cpu)  # the command and its workers, all cores
    assert done.returncode == 0, done.stderr.decode()[-500:]
    return elapsed


def test_corpus_sessions_per_second_and_speedup(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sessions = _corpus(tmp_path)
    cores = os.cpu_count() or 1
    workers = sorted({1, 2, cores})
    times: dict[int, list[float]] = {w: [] for w in workers}
    for _ in range(ROUNDS):
        for w in workers:
            times[w].append(_wall(tmp_path, w))
    median = {w: statistics.median(t) for w, t in times.items()}
    benchmark.extra_info["sessions"] = sessions
    benchmark.extra_info["cores"] = cores
    for w in workers:
        benchmark.extra_info[f"{w} workers: s"] = round(median[w], 3)
        benchmark.extra_info[f"{w} workers: sessions/s"] = round(sessions / median[w], 1)
        benchmark.extra_info[f"{w} workers: sessions/s per worker"] = round(
            sessions / median[w] / w, 1
        )
        benchmark.extra_info[f"{w} workers: speedup"] = round(median[1] / median[w], 2)
        cpu = statistics.median(CPU[w])
        benchmark.extra_info[f"{w} workers: CPU s"] = round(cpu, 3)
        benchmark.extra_info[f"{w} workers: sessions per CPU-second"] = round(sessions / cpu, 1)
    benchmark.extra_info["load average (1 min)"] = round(os.getloadavg()[0], 1)
    benchmark.pedantic(_wall, args=(tmp_path, cores), rounds=1, iterations=1)
