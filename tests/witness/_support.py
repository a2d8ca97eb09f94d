"""Running `metis run --witness` for real, and reading what it wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from metis_check import WitnessReport
from metis_cli._witnessed import witness_report
from metis_trace import WitnessSession, read_witness

ROOT = Path(__file__).resolve().parents[2]


def env(pythonpath: Sequence[Path] = (), **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*pythonpath, ROOT])
    out.update(extra)
    return out


def metis(
    *args: str, cwd: Path, environ: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "metis_cli", *args],
        cwd=cwd,
        env=dict(environ if environ is not None else env()),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def sessions(path: Path) -> list[WitnessSession]:
    with path.open(encoding="utf-8") as fh:
        return read_witness(fh)


def witness_check(trace: Path) -> WitnessReport:
    """The witness file beside `trace`, checked as `metis conform` checks it."""
    report = witness_report(trace, None)
    assert report is not None, f"no witness file beside {trace}"
    return report
