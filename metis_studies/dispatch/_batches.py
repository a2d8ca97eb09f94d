"""The real-I/O batches of the dispatch study, and the tree they run in.

- `cpu`: the paper's shape (reads, greps, two subprocesses, one edit, one
  background job) on a seeded source tree. On a 2-core machine it is
  CPU-bound: its calls use tens of milliseconds of CPU, so no schedule beats
  the CPU work over the cores.
- `shell-grep`: the same with the searches as `grep -r` subprocesses.
- `io`: calls that wait on I/O, as the paper's did: subprocesses sleeping on
  input (`timeout T tail -f`: a log followed for T seconds), a slow pipe (a
  Background writer feeding a FIFO a line every 20 ms, a Safe reader), file
  syncs (the write tool fsyncs each file and its directory), a read, a
  search and an edit. Its CPU work is small beside its waiting.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Batch = Sequence[tuple[str, dict[str, Any]]]

_WORDS = ["alpha", "beta", "gamma", "delta", "parse", "render", "config", "token", "cache", "index"]


def seed_tree(root: Path) -> None:
    """A source tree of 300 files (12 packages), notes, a log and a FIFO."""
    rng = random.Random(2024)
    for d in range(12):
        pkg = root / "src" / f"pkg{d}"
        pkg.mkdir(parents=True, exist_ok=True)
        for f in range(25):
            lines = []
            for n in range(120):
                w = rng.choice(_WORDS)
                lines.append(f"def {w}_{d}_{f}_{n}(x):  # TODO {rng.choice(_WORDS)}")
                lines.append(f"    return x + {rng.randrange(1000)}")
            (pkg / f"mod{f}.py").write_text("\n".join(lines) + "\n")
    (root / "notes.md").write_text("# Notes\n\nVERSION = 1\n" + "text line\n" * 2000)
    (root / "build.log").write_text("".join(f"step {i} ok\n" for i in range(50)))
    fifo = root / "slow.fifo"
    if not fifo.exists():
        os.mkfifo(fifo)


def reset_tree(root: Path) -> None:
    """Undo what a run of a batch changed (the edit; the written files)."""
    notes = root / "notes.md"
    notes.write_text(notes.read_text().replace("VERSION = 2", "VERSION = 1"))
    for name in ("synced-a.txt", "synced-b.txt"):
        (root / name).unlink(missing_ok=True)


CPU_BATCH: Batch = [
    ("read", {"path": "src/pkg0/mod0.py"}),
    ("read", {"path": "src/pkg3/mod7.py"}),
    ("read", {"path": "notes.md"}),
    ("grep", {"pattern": r"def parse_\d+_1\d_", "path": "src"}),
    ("grep", {"pattern": r"TODO (cache|index)", "path": "src/pkg5"}),
    ("grep", {"pattern": r"return x \+ 99\d", "path": "src", "glob": "*.py"}),
    ("bash", {"command": "find src -name '*.py' | xargs wc -l | tail -1"}),
    ("bash", {"command": "sort src/pkg1/mod1.py | uniq -c | sort -rn | head -5"}),
    ("edit", {"path": "notes.md", "old": "VERSION = 1", "new": "VERSION = 2"}),
    ("bash", {"command": "sleep 0.2", "background": True}),
]

SHELL_GREP_BATCH: Batch = [
    *CPU_BATCH[:3],
    ("bash", {"command": "grep -rnE 'def parse_[0-9]+_1[0-9]_' src | head -500"}),
    ("bash", {"command": "grep -rnE 'TODO (cache|index)' src/pkg5 | head -500"}),
    ("bash", {"command": "grep -rnE --include='*.py' 'return x \\+ 99[0-9]' src | head -500"}),
    *CPU_BATCH[6:],
]

_SYNCED = "synced line\n" * 4096  # 48 KiB, written and fsynced

IO_BATCH: Batch = [
    # A slow writer: a line every 20 ms into the FIFO (handshakes at once).
    (
        "bash",
        {
            "command": "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.02; done > slow.fifo",
            "background": True,
        },
    ),
    ("bash", {"command": "timeout 0.15 tail -f build.log | tail -1; true"}),
    ("bash", {"command": "timeout 0.1 tail -f build.log | wc -l; true"}),
    ("bash", {"command": "timeout 2 cat slow.fifo | wc -l"}),  # the slow pipe's reader
    ("bash", {"command": "timeout 0.05 tail -f build.log | head -1; true"}),
    ("read", {"path": "notes.md"}),
    ("grep", {"pattern": r"TODO (cache|index)", "path": "src/pkg5"}),
    ("write", {"path": "synced-a.txt", "content": _SYNCED}),
    ("write", {"path": "synced-b.txt", "content": _SYNCED}),
    ("edit", {"path": "notes.md", "old": "VERSION = 1", "new": "VERSION = 2"}),
]

# Calls that cannot run alone: the FIFO's writer blocks until its reader
# opens it, and the reader waits for the writer. Each is measured "alone"
# with its partner (in batch order), taking its own time.
PARTNERS: Mapping[str, Mapping[int, tuple[int, ...]]] = {"io": {0: (3,), 3: (0,)}}

BATCHES: Mapping[str, Batch] = {"cpu": CPU_BATCH, "shell-grep": SHELL_GREP_BATCH, "io": IO_BATCH}
# Tools whose work runs in this process (they hold the GIL, or block the loop
# for an fsync): their times add up whatever the schedule.
IN_PROCESS = frozenset({"read", "edit", "write"})
