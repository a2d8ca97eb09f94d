"""`metis explore --coverage`: the situation -> runtime package table is
complete (every package and top-level module of metis_runtime/ is either
driven by a situation or said to hold no decisions), names only situations
the sweep reads, and a sweep that reaches none of a package's fails."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from metis_cli._explore import explore
from metis_studies.explore import MECH_REQUIRED
from metis_studies.explore import NO_DECISIONS
from metis_studies.explore import PACKAGES
from metis_studies.explore import REQUIRED
from metis_studies.explore import package_coverage
from metis_studies.explore._packages import GROUPS

RUNTIME = Path(__file__).resolve().parents[2] / "metis_runtime"


def test_every_runtime_package_with_decisions_has_a_situation() -> None:
    packages = {p.name for p in RUNTIME.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in RUNTIME.glob("*.py")}
    grouped = {m for ms in GROUPS.values() for m in ms}
    assert not packages - set(PACKAGES) - set(NO_DECISIONS), packages - set(PACKAGES)
    assert not modules - grouped - set(NO_DECISIONS), sorted(modules - grouped - set(NO_DECISIONS))
    assert set(GROUPS) <= set(PACKAGES)
    assert all(PACKAGES[name] for name in PACKAGES)


def test_the_table_names_only_situations_the_sweep_must_reach() -> None:
    known = {*REQUIRED, *MECH_REQUIRED}
    unknown = {s for names in PACKAGES.values() for s in names} - known
    assert not unknown, sorted(unknown)


def test_a_package_with_no_situation_reached_fails() -> None:
    everything = {s: 1 for names in PACKAGES.values() for s in names}
    assert all(r.ok for r in package_coverage(everything))
    without = {s: n for s, n in everything.items() if not s.startswith("mcp:")}
    rows = {r.package: r for r in package_coverage(without)}
    assert not rows["mcp"].ok and rows["mcp"].missed == PACKAGES["mcp"]
    assert all(r.ok for name, r in rows.items() if name != "mcp")


def test_coverage_on_a_filtered_sweep_exits_1_naming_the_packages(tmp_path: Path) -> None:
    args = ["--coverage", "--sweep-only", "queue-3", "--out", str(tmp_path), "--json"]
    result = CliRunner().invoke(explore, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    assert summary["workloads"] == 1 and "divergence" not in summary
    assert "dispatch" not in summary["uncovered"] and "mcp" in summary["uncovered"]
    assert summary["coverage"]["dispatch"]["reached"] == ["queue-3"]
