"""`metis prove` and `metis counterexample` (commands in metis_cli/_prove.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from metis_cli._prove import counterexample
from metis_cli._prove import prove
from metis_proofs import ABLATIONS
from metis_proofs import PROPERTIES

from .test_scope import WIDE
from .test_scope import assert_json_rows_carry_their_scope
from .test_scope import assert_table_carries_every_rows_scope


def test_prove_json_all_hold(tmp_path: Path) -> None:
    r = CliRunner().invoke(prove, ["--depth", "2", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [x["property"] for x in doc["results"]] == [p.id for p in PROPERTIES]
    assert all(x["result"] in ("proved", "bounded(2)") for x in doc["results"])
    assert_json_rows_carry_their_scope(doc)
    # CLOSE-8, context control: every step bounded over 6-message transcripts.
    steps = {x["step"]: x["result"] for x in doc["context"]}
    assert set(steps) == {"fold (collapse, compaction, retry)", "prune", "snip", "offload"}
    assert set(steps.values()) == {"bounded(6 msgs)"}
    assert {x["invariant"] for x in doc["context"]} == {"CLOSE-8"}
    assert {p.name for p in tmp_path.glob("*.smt2")} == {f"{p.id}.smt2" for p in PROPERTIES}


def test_prove_table(tmp_path: Path) -> None:
    r = CliRunner().invoke(prove, ["--depth", "2", "--out", str(tmp_path), *WIDE])
    assert r.exit_code == 0, r.output
    assert "invariant  method" in r.stdout and "SCHED-2" in r.stdout
    assert "CLOSE-8    bmc, prune" in r.stdout
    assert_table_carries_every_rows_scope(r.stdout)


def test_prove_exits_1_on_a_refuted_property(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        prove, ["--depth", "5", "--out", str(tmp_path), "--ablate", "no-preflight"]
    )
    assert r.exit_code == 1, r.output
    assert "AUTH-2 refuted" in r.stdout


def test_prove_bad_usage_exits_2(tmp_path: Path) -> None:
    assert CliRunner().invoke(prove, ["--depth", "0"]).exit_code == 2
    assert CliRunner().invoke(prove, ["--ablate", "nope"]).exit_code == 2
    assert CliRunner().invoke(prove, ["--depth", "x"]).exit_code == 2


def test_counterexample_writes_files_and_exits_1(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        counterexample, ["--ablate", "retry-after-commit", "--out", str(tmp_path)]
    )
    assert r.exit_code == 1, r.output
    assert "RETRY-1" in r.stdout
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "cex_retry_after_commit.jsonl",
        "cex_retry_after_commit.itf.json",
        "cex_retry_after_commit.dot",
        "test_cex_retry_after_commit.py",
    } <= names


def test_counterexample_unknown_ablation_exits_2_with_one_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(counterexample, ["--ablate", "nope", "--out", str(tmp_path)])
    assert r.exit_code == 2
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert all(name in lines[0] for name in ABLATIONS)


def test_counterexample_none_within_depth_exits_0(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        counterexample,
        ["--ablate", "exclusive-as-safe", "--out", str(tmp_path), "--max-depth", "3"],
    )
    assert r.exit_code == 0, r.output
    assert "no counterexample" in r.stdout
