"""The CLI end to end: start-up and one 3 MB Claude Code session (issue 14, fast start).

Each round runs, in fresh processes and interleaved, `python -c pass` (the
interpreter's own start, the baseline), `metis --version`, and
`metis conform --format claude-code` on a real 3.2 MB session of the shared
corpus (or, where the corpus is absent, the 3 MB session `bench_transcripts`
builds from the checked-in lines). Recorded: the median wall time of each,
and each as a ratio to the baseline measured in the same run. Targets:
`--version` at most 0.15 s, `conform` at most 0.3 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_transcripts import SIZES
from bench_transcripts import _session

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "claude-code"
SESSION = CORPUS / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
METIS = [sys.executable, "-m", "metis_cli"]
ROUNDS = 15


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr.decode()
    return elapsed


def _session_file(tmp_path: Path) -> Path:
    if SESSION.is_file():
        return SESSION
    built = tmp_path / "session.jsonl"
    built.write_text("\n".join(_session(SIZES[-1])) + "\n")
    return built


def test_cli_start_and_conform_3mb(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    session = _session_file(tmp_path)
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "metis --version": [*METIS, "--version"],
        "metis conform (3 MB)": [*METIS, "conform", "--format", "claude-code", str(session)],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(ROUNDS):
        for name, argv in commands.items():
            times[name].append(_wall(argv))
    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["python -c pass"]
    benchmark.extra_info["session_bytes"] = session.stat().st_size
    for name, value in median.items():
        benchmark.extra_info[f"{name} s"] = round(value, 4)
        if name != "python -c pass":
            benchmark.extra_info[f"{name} / python -c pass"] = round(value / base, 2)
    benchmark.pedantic(_wall, args=(commands["metis conform (3 MB)"],), rounds=3, iterations=1)
    # Not a timed gate: the figures go to the README. The ordering is a sanity check.
    assert median["metis --version"] < median["metis conform (3 MB)"]
