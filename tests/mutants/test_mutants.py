"""The seeded runtime faults of `make mutate`: each patch is well formed, applies
to the tree as it is, touches `metis_runtime/` only and keeps ruff green (mypy
is checked on each patched copy by `make mutate`, which also runs them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from metis_studies.mutate import MutantError, changed_files, mutants, patched_copy, read_mutant

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ALL = mutants(HERE)


def test_there_are_at_least_25_faults_with_distinct_numbers() -> None:
    assert len(ALL) >= 25, len(ALL)
    numbers = [m.number for m in ALL]
    assert len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("mutant", ALL, ids=[m.label for m in ALL])
def test_the_patch_applies_touches_the_runtime_and_keeps_ruff_green(
    mutant: object, tmp_path: Path
) -> None:
    from metis_studies.mutate import Mutant

    assert isinstance(mutant, Mutant)
    files = changed_files(mutant)
    assert files and all(f.startswith("metis_runtime/") for f in files), files
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((REPO / rel).read_bytes())
    done = subprocess.run(
        ["git", "apply", str(mutant.patch)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{mutant.label} does not apply: {done.stderr}"
    for rel in files:
        patched = (tmp_path / rel).read_text()
        assert patched != (REPO / rel).read_text()
        lint = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--stdin-filename", rel, "-"],
            cwd=REPO,
            input=patched,
            capture_output=True,
            text=True,
        )
        assert lint.returncode == 0, f"{mutant.label}: {lint.stdout}"


def test_a_malformed_patch_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "7_x.patch"
    bad.write_text("no description\n")
    with pytest.raises(MutantError, match="line 1 must be"):
        read_mutant(bad)
    with pytest.raises(MutantError, match=r"NN_name\.patch"):
        read_mutant(tmp_path / "nameless.patch")
    stale = tmp_path / "99_stale.patch"
    stale.write_text(
        "# a patch whose context is gone\n--- a/metis_runtime/_loop.py\n+++ b/metis_runtime/_loop.py\n"
        "@@ -1,1 +1,1 @@\n-no such line\n+another\n"
    )
    with pytest.raises(MutantError, match="does not apply"):
        patched_copy(REPO, read_mutant(stale), tmp_path / "copy")
