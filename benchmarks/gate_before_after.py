"""The gate's decision time per call before issue 12 (bashlex) and after
(tree-sitter-bash, the documented semantics), side by side in one run.

    python benchmarks/gate_before_after.py [BEFORE_COMMIT]

makes a temporary git worktree of BEFORE_COMMIT (default: the parent of the
first issue-12 commit), installs bashlex into a temporary folder for it, and
runs the same measurement in fresh interpreters, alternating old and new:
every bypass-corpus command and control under its own rules, and the
shipped scenarios' calls. Prints microseconds per call (median of rounds).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "f769a22"  # main before issue 12
ROUNDS = 5

MEASURE = r"""
import json, os, sys, time, tempfile, statistics
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import bench_gate as b
from metis_trace import Mode, Route, ToolKind
from metis_runtime.permissions import Gate
from metis_runtime.permissions import _gate as g
ws = Path(os.path.realpath(tempfile.mkdtemp())); (ws / "src").mkdir()
corpus = [(Gate(b._policy(r), Mode.DEFAULT, ws, Route.HEADLESS), c) for r, c in b.corpus_calls()]
sg = Gate(b._policy(b.USUAL), Mode.ACCEPT_EDITS, ws, Route.HEADLESS)
calls = b.scenario_calls()
def run_corpus():
    for gate, cmd in corpus:
        gate.decide("bash", {"command": cmd}, ToolKind.EXEC)
    return len(corpus)
def run_scen():
    for tool, inp in calls:
        p = inp.get("path")
        paths = [p] if isinstance(p, str) else []
        sg.decide(tool, inp, b._KINDS.get(tool, ToolKind.EXEC), paths)
    return len(calls)
out = {}
for name, fn in (("corpus", run_corpus), ("scenarios", run_scen)):
    vals = []
    for _ in range(int(sys.argv[1])):
        g._analyze.cache_clear()
        t = time.perf_counter()
        n = fn()
        vals.append((time.perf_counter() - t) / n * 1e6)
    out[name] = statistics.median(vals)
print(json.dumps(out))
"""


def main() -> None:
    before = sys.argv[1] if len(sys.argv) > 1 else BEFORE
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        libs = Path(tmp) / "libs"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), before],
                       check=True, capture_output=True)  # fmt: skip
        try:
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(libs),
                            "bashlex"], check=True)  # fmt: skip
            sides = {
                "before": f"{old}{os.pathsep}{libs}",
                "after": str(ROOT),
            }
            results: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
            for _ in range(ROUNDS):
                for name, path in sides.items():
                    env = {**os.environ, "PYTHONPATH": path}
                    done = subprocess.run(
                        [sys.executable, "-c", MEASURE, "5", str(ROOT / "benchmarks")],
                        env=env, cwd=tmp, capture_output=True, text=True, check=True,
                    )  # fmt: skip
                    results[name].append(json.loads(done.stdout))
            for name, rows in results.items():
                corpus = statistics.median(r["corpus"] for r in rows)
                scen = statistics.median(r["scenarios"] for r in rows)
                print(f"{name:7} corpus {corpus:8.1f} us/call   scenarios {scen:8.1f} us/call")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False, capture_output=True)  # fmt: skip


if __name__ == "__main__":
    main()
