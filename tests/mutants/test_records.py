"""The committed score record (tests/mutants/record/, issue 11 "Mutation score"):
every record is of the patch as it is now (its sha256), and the README's
mutation block is exactly what `python -m metis_studies.mutate --summary`
prints from the records."""

from __future__ import annotations

import datetime
import json
import shutil
from pathlib import Path

import pytest

from metis_studies.mutate import Caught
from metis_studies.mutate import Mutant
from metis_studies.mutate import MutantResult
from metis_studies.mutate import check_records
from metis_studies.mutate import make_record
from metis_studies.mutate import mutants
from metis_studies.mutate import patch_sha256
from metis_studies.mutate import read_blind
from metis_studies.mutate import read_record
from metis_studies.mutate import read_records
from metis_studies.mutate import readme_block
from metis_studies.mutate import summary
from metis_studies.mutate import write_record
from metis_studies.mutate.__main__ import main

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RECORDS = HERE / "record"
ALL = mutants(HERE)


def _result(mutant: Mutant, ids: tuple[str, ...]) -> MutantResult:
    return MutantResult(
        mutant,
        True,
        "ruff, mypy",
        (Caught("explore", ids, "a finding"), Caught("metis run", (), "")),
        {"calls": 2, "calls_before_shrinking": 3},
        123.4,
    )


def _unpatched() -> Mutant:
    return Mutant("00", "unpatched", "the runtime as it is", Path("-"))


def _folder(tmp_path: Path) -> tuple[list[Mutant], Path]:
    """Two faults (copies of real patches) and their records, plus the baseline."""
    faults = tmp_path / "faults"
    faults.mkdir()
    for m in ALL[:2]:
        shutil.copy(m.patch, faults / m.patch.name)
    found = mutants(faults)
    records = tmp_path / "record"
    when = datetime.datetime(2026, 12, 1, 17, 0, tzinfo=datetime.UTC)
    for m, ids in zip(found, (("SCHED-2",), ()), strict=True):
        write_record(
            records,
            make_record(
                _result(m, ids), commit="a" * 40, budget=60, seed=0, load=(1, 2), date=when
            ),
        )
    base = make_record(_result(_unpatched(), ()), commit="a" * 40, budget=60, seed=0, load=(1, 1))
    write_record(records, base)
    return found, records


def test_a_record_round_trips_and_names_its_patch(tmp_path: Path) -> None:
    found, records = _folder(tmp_path)
    r = read_record(records / f"{found[0].label}.json")
    assert r.patch_sha256 == patch_sha256(found[0].patch)
    assert r.caught_by == ("SCHED-2",) and r.commit == "a" * 40
    assert r.budget == 60 and r.seconds == 123.4 and r.date == "2026-12-01T17:00:00Z"
    assert read_record(records / "00_unpatched.json").patch_sha256 is None
    assert check_records(found, read_records(records)) == []


def test_a_missing_a_stale_and_an_orphan_record_are_named(tmp_path: Path) -> None:
    found, records = _folder(tmp_path)
    with found[0].patch.open("a") as f:  # the patch changed after its record ran
        f.write("\n")
    (records / f"{found[1].label}.json").rename(records / "99_gone.json")
    data = json.loads((records / "99_gone.json").read_text())
    data["mutant"] = "99_gone"
    (records / "99_gone.json").write_text(json.dumps(data))
    (records / "00_unpatched.json").unlink()
    problems = check_records(found, read_records(records))
    assert [p.split(":")[0] for p in problems] == [
        found[0].label,
        found[1].label,
        "99_gone",
        "00_unpatched",
    ], problems
    assert "stale record" in problems[0] and "no record" in problems[1]


def test_the_summary_says_caught_not_caught_and_no_record(tmp_path: Path) -> None:
    found, records = _folder(tmp_path)
    (records / f"{found[1].label}.json").unlink()
    text = summary(found, read_records(records))
    assert text.startswith("**1 of the 1 faults with a record were caught by an invariant ID**")
    assert "1 without a record" in text and "unpatched runtime at aaaaaaaaaa: nothing" in text
    rows = [line for line in text.splitlines() if line.startswith(f"| {found[0].number} ")]
    assert rows and "| SCHED-2 | explore: SCHED-2 | 3 → 2 | 2.1 (1.0) | aaaaaaaaaa |" in rows[0]
    write_record(
        records,
        make_record(_result(found[1], ()), commit="b" * 40, budget=60, seed=0, load=(1, 1)),
    )
    assert "**NOT CAUGHT** | nothing" in summary(found, read_records(records))


def test_summary_cli_prints_the_block_and_exits_1_on_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found, records = _folder(tmp_path)
    folder = found[0].patch.parent
    assert main(["--mutants", str(folder), "--summary", str(records)]) == 0
    assert capsys.readouterr().out.strip() == summary(found, read_records(records))
    (records / "00_unpatched.json").unlink()
    assert main(["--mutants", str(folder), "--summary", str(records)]) == 1
    assert "00_unpatched: no baseline record" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.pop("commit"), "commit: missing"),
        (lambda d: d.update(caught_by="SCHED-2"), "caught_by: wrong type str"),
        (lambda d: d.update(patch_sha256="abc"), "patch_sha256: a 64-digit hex string"),
        (lambda d: d.update(mutant="02_other"), "is not the file's name"),
        (lambda d: d.update(record=7), "record: must be 1"),
    ],
)
def test_a_malformed_record_is_one_line_naming_the_file_and_field_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: object, says: str
) -> None:
    found, records = _folder(tmp_path)
    path = records / f"{found[0].label}.json"
    data = json.loads(path.read_text())
    assert callable(edit)
    edit(data)
    path.write_text(json.dumps(data))
    code = main(["--mutants", str(found[0].patch.parent), "--summary", str(records)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and str(path) in err and says in err, err


def test_every_patch_has_a_record_of_it_as_it_is_and_there_is_a_baseline() -> None:
    """No patch without a record, no record stale (run on a patch since
    changed) or of a patch that is gone, and the unpatched baseline's."""
    problems = check_records(ALL, read_records(RECORDS))
    assert problems == [], problems


def test_the_readme_mutation_block_is_the_summary_of_the_records() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_block(readme) == summary(ALL, read_records(RECORDS)), (
        "README's mutation block differs from "
        "`python -m metis_studies.mutate --summary tests/mutants/record`"
    )


def test_the_summary_scores_the_blind_faults_listed_beside_the_patches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23: `BLIND` beside the patches names the faults written blind; the
    block says how many of those with a record an ID caught (none listed: no line)."""
    found, records = _folder(tmp_path)
    assert "blind faults" not in summary(found, read_records(records))
    folder = found[0].patch.parent
    (folder / "BLIND").write_text(
        f"# written blind\n{int(found[0].number)}\n{int(found[1].number)}  # both\n"
    )
    text = summary(found, read_records(records))
    assert "\nblind faults: 1 of 2 with a record caught by an invariant ID\n" in text, text
    (records / f"{found[0].label}.json").unlink()  # the caught one has no record now
    assert "blind faults: 0 of 1 with a record" in summary(found, read_records(records))
    assert "blind faults" not in summary(found, read_records(records), blind=())
    (folder / "BLIND").write_text("32\nthirty-three\n")
    assert main(["--mutants", str(folder), "--summary", str(records)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BLIND" in err and "not a fault number" in err, err


def test_blind_lists_faults_32_to_59_and_each_is_a_patch() -> None:
    """Each blind fault is a patch: scored beside the others, or waiting in
    `unrecorded/` for its recorded run (no patch counts without its record)."""
    blind = read_blind(HERE)
    assert blind == frozenset(range(32, 60)), sorted(blind)
    waiting = {int(m.number) for m in mutants(HERE / "unrecorded")}
    assert blind <= {int(m.number) for m in ALL} | waiting
    assert not waiting & {int(m.number) for m in ALL}
