"""The proofs: verdicts, depth, SMT-LIB2 files re-checked by cvc5."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_check import check_trace
from metis_model import BY_ID
from metis_proofs import ABLATIONS
from metis_proofs import PROPERTIES
from metis_proofs import Induction
from metis_proofs import LoopConfig
from metis_proofs import LoopSession
from metis_proofs import LoopSystem
from metis_proofs import ProofResult
from metis_proofs import Verdict
from metis_proofs import cvc5_answers
from metis_proofs import expected_answers
from metis_proofs import get_property
from metis_proofs import houdini
from metis_proofs import prove
from metis_proofs import prove_all
from metis_proofs import z3_answers
from metis_trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
DEPTH = 20


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> list[ProofResult]:
    return prove_all(tmp_path_factory.mktemp("proofs"), depth=DEPTH)


def test_every_property_has_a_result(proved: list[ProofResult]) -> None:
    assert [r.prop_id for r in proved] == [p.id for p in PROPERTIES]


def test_perm_and_child_claims_are_proved_for_all_inputs(proved: list[ProofResult]) -> None:
    smt = [r for r in proved if r.method == "smt"]
    assert {r.invariant for r in smt} == {
        "PERM-1",
        "PERM-2",
        "PERM-3",
        "PERM-4",
        "PERM-5",
        "PERM-6",
        "CHILD-2",
        "CHILD-4",  # the guard claim, plus the ledger's 1-induction (k = 1)
        # the plan path (smt/_plan.py): claims, and the turn system's 1-induction
        "PLAN-2",
        "PLAN-4",
        "PLAN-5",
        "PLAN-6",
        "PLAN-7",
        "PLAN-8",
        "PLAN-9",
        "PLAN-12",
    }
    for r in smt:
        assert r.verdict is Verdict.PROVED, r


def test_loop_properties_hold_at_depth_20_or_beyond(proved: list[ProofResult]) -> None:
    loop = [r for r in proved if r.method != "smt"]
    families = {BY_ID[r.invariant].family for r in loop}
    assert {"AUTH", "CLOSE", "SCHED", "RETRY"} <= families
    for r in loop:
        assert r.verdict in (Verdict.PROVED, Verdict.BOUNDED), r
        assert r.depth is not None and r.depth >= DEPTH, r
        if r.verdict is Verdict.PROVED:
            assert r.method == "k-induction" and r.k is not None


def test_cvc5_gives_the_same_verdict_on_every_smt2_file(proved: list[ProofResult]) -> None:
    for r in proved:
        assert r.smt2 is not None, r
        path = Path(r.smt2)
        expected = expected_answers(path)
        assert expected and all(a == "unsat" for a in expected), (r.prop_id, expected)
        assert cvc5_answers(path, timeout_s=60) == expected, r.prop_id


def test_z3_rereads_its_own_files(proved: list[ProofResult]) -> None:
    for prop_id in ("PERM-2", "CHILD-2", "SCHED-1"):
        r = next(x for x in proved if x.prop_id == prop_id)
        assert r.smt2 is not None
        assert z3_answers(Path(r.smt2)) == expected_answers(Path(r.smt2))


def test_a_timeout_is_unknown_never_proved() -> None:
    session = LoopSession(depth=DEPTH, timeout_s=0.001)
    result = session.prove(get_property("SCHED-2"), None)
    if result.verdict is Verdict.PROVED:  # only if induction itself finished in time
        assert result.k is not None and "inductive" in result.detail
    else:
        assert result.verdict is Verdict.UNKNOWN and not result.holds


def test_an_ablated_protocol_is_refuted_with_a_trace(tmp_path: Path) -> None:
    session = LoopSession(LoopConfig(ablations=frozenset({"no-preflight"})), depth=6)
    result = session.prove(get_property("AUTH-2"), tmp_path)
    assert result.verdict is Verdict.REFUTED and result.depth == 5
    assert result.witness is not None and result.smt2 is not None
    header, events = read_trace(Path(result.witness).read_text().splitlines())
    first = check_trace(events, header).first
    assert first is not None and first.invariant == "AUTH-2"
    assert cvc5_answers(Path(result.smt2), timeout_s=60) == ["sat"]


def test_the_child_clone_claim_fails_without_cloning(tmp_path: Path) -> None:
    config = LoopConfig(ablations=frozenset({"child-gate-not-cloned"}))
    result = prove("CHILD-2", tmp_path, config=config)
    assert result.verdict is Verdict.REFUTED


@pytest.mark.exhaustive
def test_loop_properties_at_depth_40(tmp_path: Path) -> None:
    for r in prove_all(tmp_path, depth=40):
        assert r.holds, r


@pytest.mark.parametrize("ablation", list(ABLATIONS))
def test_induction_never_proves_what_an_ablation_breaks(ablation: str) -> None:
    """Soundness check of the machinery: Houdini + k-induction on a weakened
    protocol must fail for the invariant that BMC shows broken."""
    system = LoopSystem(LoopConfig(ablations=frozenset({ablation})))
    invariant = houdini(system)
    assert invariant is not None
    outcome = Induction(system, invariant).check(ABLATIONS[ablation], 2)
    assert not outcome.proved
