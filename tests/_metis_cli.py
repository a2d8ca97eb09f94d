"""The real `metis` command run as a subprocess of the tests: no provider
key in its environment, this tree on its import path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def env(pythonpath: Sequence[Path] = (), **extra: str) -> dict[str, str]:
    """This process's environment without provider keys, `pythonpath` and
    this tree on PYTHONPATH, and `extra` on top."""
    out = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*pythonpath, ROOT])
    out.update(extra)
    return out


def metis_argv(*args: str) -> list[str]:
    """`metis ARGS` as a subprocess (`python -m metis_cli`)."""
    return [sys.executable, "-m", "metis_cli", *args]


def metis(
    *args: str,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`metis ARGS` to its end, its output captured (`environ`: default `env()`)."""
    return subprocess.run(
        metis_argv(*args),
        cwd=cwd,
        env=dict(environ if environ is not None else env()),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
