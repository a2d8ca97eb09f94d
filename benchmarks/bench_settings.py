"""`metis settings check` per file over the real-settings corpus (issue 25:
under 2 s per file).

Each round runs, in fresh processes and interleaved, `python -c pass` (the
interpreter's start), `metis --version` (metis's own start) and `metis
settings check FILE` on each of the corpus's 25 published settings files
(`tests/data/settings-corpus/`), from an empty project under an empty home,
so only that file is read. Recorded: for `settings check`, the median over
rounds of each file, then the median and the maximum over files, each also
as a ratio to `metis --version` measured in the same run (what the analysis
adds to start-up); and the analysis alone in this process (the lint, the
witness search with its deriver confirmations and metis's gate), best of 3
per file, median and maximum over files. The machine's one-minute load
average is recorded too: its two cores may be shared, and start-up (most of
the time) slows with them.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _timing import best_of
from click.testing import CliRunner

from metis_cli._main import cli

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "settings-corpus"
FILES = [CORPUS / e["file"] for e in json.loads((CORPUS / "provenance.json").read_text())["files"]]
METIS = [sys.executable, "-m", "metis_cli"]
ROUNDS = 3


def _wall(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, cwd=cwd, env=env)
    elapsed = time.perf_counter() - start
    assert done.returncode in (0, 1), done.stderr.decode()
    return elapsed


def _in_process(project: Path, settings: Path) -> float:
    """The analysis without start-up: the command in this process, best of 3."""
    args = ["settings", "check", "--project", str(project), str(settings)]
    return best_of(lambda: CliRunner().invoke(cli, args))


def test_settings_check_per_file_over_the_corpus(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "METIS_MANAGED_SETTINGS_DIRS": str(home / "etc")}
    python, version = [sys.executable, "-c", "pass"], [*METIS, "--version"]
    start: dict[str, list[float]] = {"python -c pass": [], "metis --version": []}
    per_file: dict[Path, list[float]] = {f: [] for f in FILES}
    for _ in range(ROUNDS):
        for f in FILES:
            start["python -c pass"].append(_wall(python, project, env))
            start["metis --version"].append(_wall(version, project, env))
            per_file[f].append(_wall([*METIS, "settings", "check", str(f)], project, env))
    medians = sorted(statistics.median(v) for v in per_file.values())
    base = {name: statistics.median(v) for name, v in start.items()}
    info = benchmark.extra_info
    info["files"] = len(FILES)
    info["load average (1 min) after"] = round(os.getloadavg()[0], 2)  # shared cores
    for name, value in base.items():
        info[f"{name} s"] = round(value, 4)
    for label, value in (("median", statistics.median(medians)), ("max", medians[-1])):
        info[f"settings check {label} s/file"] = round(value, 4)
        info[f"settings check {label} / metis --version"] = round(
            value / base["metis --version"], 2
        )

    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        alone = sorted(_in_process(project, f) for f in FILES)
    finally:
        if old_home is not None:
            os.environ["HOME"] = old_home
    info["analysis in process median s/file"] = round(statistics.median(alone), 4)
    info["analysis in process max s/file"] = round(alone[-1], 4)
    benchmark.pedantic(
        _wall, args=([*METIS, "settings", "check", str(FILES[0])], project, env), rounds=3
    )
    # Not a timed gate: the figures go to the README. Sanity: start-up is part of it.
    assert base["metis --version"] < medians[-1]
