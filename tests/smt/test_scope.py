"""Every proof result says how far it reaches (issue 25): `proved for all
widths`, `proved for <= 3 calls, ...` (the `LoopConfig` bounds), `bounded to
depth k (...)`; in `metis prove`, `metis check --json` and `metis demo`; and
a loop row's seconds are its own, not the shared BMC and Houdini work."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._params import WIDTHS_TIMEOUT_S as CLI_WIDTHS_TIMEOUT_S
from metis_cli._spec import check as check_cmd
from metis_proofs import PROPERTIES
from metis_proofs import WIDTHS_TIMEOUT_S
from metis_proofs import LoopConfig
from metis_proofs import LoopSession
from metis_proofs import ProofResult
from metis_proofs import Verdict
from metis_proofs import prove_all
from metis_proofs._results import SCOPE_PREFIX

BOUNDS = LoopConfig().bounds()
LOOP = {p.id for p in PROPERTIES if p.method == "k-induction"}
ALL_WIDTHS = "proved for all widths"
AND_RULES = "proved for all widths of calls, jobs, queue keys, regions and rules"
# Each all-widths query's limit in the runs below: 10 s (the default) may not be
# enough on a loaded 2-core machine, and then a row rightly keeps its finite scope.
WIDE = ("--widths-timeout", "120")


def _loop_scope_ok(scope: str, verdict: str) -> bool:
    """A loop row claims all widths only as proved; otherwise names the bounds."""
    if scope.startswith(ALL_WIDTHS):
        return verdict == "proved"
    return BOUNDS in scope


def test_the_bounds_name_every_dimension() -> None:
    assert BOUNDS == "≤ 3 calls, ≤ 2 jobs, ≤ 2 queue keys, ≤ 2 rules, ≤ 2 regions"


@pytest.mark.parametrize("verdict", list(Verdict))
def test_a_result_cannot_be_made_without_its_scope(verdict: Verdict) -> None:
    with pytest.raises(ValueError, match="scope"):
        ProofResult("SCHED-1", "SCHED-1", "bmc", verdict, 20, 0.1)
    wrong = "bounded to depth 20" if verdict is Verdict.PROVED else "proved for all widths"
    with pytest.raises(ValueError, match="scope"):
        ProofResult("SCHED-1", "SCHED-1", "bmc", verdict, 20, 0.1, scope=wrong)
    ok = ProofResult("X", "SCHED-1", "bmc", verdict, 20, 0.1, scope=SCOPE_PREFIX[verdict] + "x")
    assert ok.to_json()["scope"] == ok.scope


def test_bounded_rows_say_their_depth_and_bounds() -> None:
    # without Houdini's lemmas most loop properties are not 1-inductive: bounded
    session = LoopSession(depth=2, lemmas=False)
    results = [session.prove(p, None) for p in PROPERTIES if p.id in LOOP]
    bounded = [r for r in results if r.verdict is Verdict.BOUNDED]
    assert bounded, "expected some property not 1-inductive without lemmas"
    for r in bounded:
        assert r.scope == f"bounded to depth 2 ({BOUNDS})", r


def test_a_loop_rows_seconds_are_its_own() -> None:
    session = LoopSession(depth=3)
    start = time.perf_counter()
    results = prove_all(depth=3, session=session)
    wall = time.perf_counter() - start
    loop = [r.seconds for r in results if r.prop_id in LOOP]
    shared = sum(session.shared_seconds.values())
    # each row counted the shared work once would exceed the wall time many times over
    assert sum(loop) + shared <= wall + 0.05, (sum(loop), shared, wall)
    assert len(set(loop)) > 1


def test_check_json_gives_each_loop_proof_its_scope() -> None:
    args = ["--runs", "3", "--broken", "1", "--depth", "2", "--json", *WIDE]
    r = CliRunner().invoke(check_cmd, args)
    doc = json.loads(r.stdout)
    for inv in ("CLOSE-1", "AUTH-2", "SCHED-3", "RETRY-1"):
        row = doc["invariants"][inv]
        assert row["proofs"], inv
        for proof in row["proofs"]:
            assert _loop_scope_ok(proof["scope"], proof["result"]), proof
            assert proof["scope"] in row["proof"]
    assert doc["invariants"]["PERM-2"]["proofs"][0]["scope"].startswith("proved for all inputs")
    for inv in ("AUTH-1", "AUTH-2", *(f"CLOSE-{n}" for n in range(1, 6)), "SCHED-1", "SCHED-3"):
        assert doc["invariants"][inv]["proofs"][0]["scope"] == AND_RULES, inv


def assert_json_rows_carry_their_scope(doc: dict[str, Any]) -> None:
    """`metis prove --json` (tests/smt/test_cli.py runs it once for all its checks)."""
    assert set(doc["shared_seconds"]) == {"houdini", "bmc", "widths", "rules"}
    for row in doc["results"]:
        assert row["scope"].startswith(SCOPE_PREFIX[Verdict(row["verdict"])]), row
        if row["property"] in LOOP:
            assert _loop_scope_ok(row["scope"], row["verdict"]), row
    assert {x["scope"] for x in doc["context"]} == {"bounded to transcripts of ≤ 6 messages"}


def assert_table_carries_every_rows_scope(table: str) -> None:
    """`metis prove`'s table (one run, in tests/smt/test_cli.py)."""
    rows: dict[str, list[str]] = {}
    for line in table.splitlines():
        if line[:1].isupper():
            rows.setdefault(line.split()[0], []).append(line)
    for prop in LOOP:
        for line in rows[prop]:  # each of its rows (one per method) states its scope
            assert BOUNDS in line or ALL_WIDTHS in line, line
    # and one of CLOSE-1's rows is the proof for all widths and rule sets (the
    # run gives the all-widths queries a loaded machine's time: --widths-timeout)
    assert any(AND_RULES in line for line in rows["CLOSE-1"]), rows["CLOSE-1"]
    assert "shared by the loop rows: houdini" in table


def assert_demo_proof_rows_state_their_scope(rows: list[dict[str, Any]]) -> None:
    """`metis demo`'s proof rows (the demo's own run, in tests/cli/test_cli.py:
    proving again here would cost a minute of CPU for the same rows)."""
    rows = [row for row in rows if row["part"] == "proofs"]
    assert rows
    for row in rows:
        if row["check"] == "work shared by the loop rows":
            assert "houdini" in row["detail"] and "bmc" in row["detail"]
            continue
        prop = row["check"].split(":")[0]
        assert row["detail"].startswith(tuple(SCOPE_PREFIX.values())), row
        if prop in LOOP:
            assert _loop_scope_ok(row["detail"], "proved" if row["ok"] else "?"), row
    assert any(
        row["detail"].startswith(AND_RULES) for row in rows if row["check"].startswith("AUTH-1")
    )


def test_widths_timeout_sets_the_all_widths_limit() -> None:
    assert CLI_WIDTHS_TIMEOUT_S == WIDTHS_TIMEOUT_S  # `--help` shows the library's default
    assert LoopSession(widths_timeout_s=7.5).widths_timeout_s == 7.5
    assert LoopSession(widths=False, widths_timeout_s=7.5).widths_timeout_s == 0.0
    # 0 skips the all-widths proofs: every loop row keeps its finite scope
    r = CliRunner().invoke(
        check_cmd,
        ["--runs", "3", "--broken", "1", "--depth", "2", "--json", "--widths-timeout", "0"],
    )
    doc = json.loads(r.stdout)
    assert doc["invariants"]["CLOSE-1"]["proofs"][0]["scope"].startswith("proved for ≤ 3 calls")
    bad = CliRunner().invoke(check_cmd, ["--widths-timeout", "nan"])
    assert bad.exit_code == 2 and "--widths-timeout" in bad.output
