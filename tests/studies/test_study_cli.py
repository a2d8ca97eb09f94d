"""`metis study NAME --out DIR`: the files each study writes, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._study import NAMES
from metis_cli._study import study
from metis_studies._plots import png_colours
from metis_studies._plots import svg_marks
from metis_studies.report import STUDIES
from metis_studies.report import Written
from tests._metis_cli import metis

QUICK = ["child-boundary", "permission-modes", "model-ablations", "snapshot", "read-marker"]


def test_every_study_has_a_name_in_the_command() -> None:
    assert set(NAMES) == set(STUDIES)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("study")
    result = CliRunner().invoke(study, [*QUICK, "--quick", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.output)


def test_each_study_writes_tables_and_figures(written: tuple[Path, dict[str, object]]) -> None:
    out, data = written
    assert data["ok"] is True
    studies = {s["study"]: s for s in data["studies"]}  # type: ignore[attr-defined]
    assert list(studies) == QUICK
    for name in QUICK:
        files = [Path(f) for f in studies[name]["files"]]
        assert all(f.parent == out / name and f.stat().st_size > 0 for f in files), name
        suffixes = {f.suffix for f in files}
        assert {".json", ".csv", ".md", ".png", ".svg"} <= suffixes, name
        for png in (f for f in files if f.suffix == ".png"):
            assert png_colours(png) > 3, png  # not one colour
            assert png.with_suffix(".svg") in files


def test_the_figures_hold_a_mark_per_datum(written: tuple[Path, dict[str, object]]) -> None:
    out, _ = written
    assert svg_marks(out / "child-boundary" / "child-boundary.svg") == 4  # the 2x2 table
    assert svg_marks(out / "permission-modes" / "permission-modes-map.svg") == 4 * 5 * 32
    assert svg_marks(out / "permission-modes" / "permission-modes-ablation.svg") == 5
    assert svg_marks(out / "model-ablations" / "model-ablations.svg") == 1
    snapshot = json.loads((out / "snapshot" / "snapshot.json").read_text())
    assert svg_marks(out / "snapshot" / "snapshot.svg") == 3 * len(snapshot["units"])
    marker = json.loads((out / "read-marker" / "read-marker.json").read_text())
    assert svg_marks(out / "read-marker" / "read-marker.svg") == len(marker)


def test_the_tables_say_what_the_studies_found(written: tuple[Path, dict[str, object]]) -> None:
    out, _ = written
    table = (out / "child-boundary" / "child-boundary.md").read_text().splitlines()
    assert table[0].startswith("| cloned gate | filtered registry |") and len(table) == 6
    cells = json.loads((out / "child-boundary" / "child-boundary.json").read_text())["cells"]
    assert [c["effect_admitted"] for c in cells] == [0, 0, 1, 1]
    marker = json.loads((out / "read-marker" / "read-marker.json").read_text())
    live = [c for c in marker if c["live"]]
    assert live and all("is not set" in c["skipped"] for c in live)
    assert all(c["passed"] == 1 for c in marker if not c["live"])


def test_a_failing_study_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(out: Path, sizes: object) -> Written:
        return Written("faults", (), False, "1/14 rows hold")

    monkeypatch.setitem(STUDIES, "faults", broken)
    result = CliRunner().invoke(study, ["faults", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "faults: FAIL: 1/14 rows hold" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch", "--out", "x"], "NAME: unknown study 'nosuch'"),
        (["faults"], "Missing option '--out'"),
        (["dispatch", "--out", "x", "--pairs", "1"], "--pairs"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    done = metis("study", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
