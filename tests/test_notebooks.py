"""Every notebook runs top to bottom (their own asserts hold)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.py"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebook_runs(notebook: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(notebook)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
