"""The bounded z3 proof of CLOSE-8 (metis_proofs/_context.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_model._context import Block
from metis_model._context import BlockKind
from metis_model._context import Msg
from metis_model._context import Transcript
from metis_model._context import provider_valid
from metis_proofs._context import CONTEXT_PROPERTIES
from metis_proofs._context import ContextProof
from metis_proofs._context import prove_context
from metis_proofs._context import valid_concrete

from .test_context import transcripts


@pytest.fixture(scope="module")
def proofs() -> dict[str, ContextProof]:
    return {p.name: p for p in prove_context(6, max_calls=2, ids=2)}


def test_every_step_is_bounded_and_every_ablation_refuted(proofs: dict[str, ContextProof]) -> None:
    assert set(proofs) == set(CONTEXT_PROPERTIES)
    for name, proof in proofs.items():
        assert proof.as_expected, (name, proof)
        assert proof.invariant == "CLOSE-8"


def test_the_naive_cut_counterexample_orphans_results(proofs: dict[str, ContextProof]) -> None:
    proof = proofs["ablation: naive_cut"]
    assert proof.verdict == "refuted" and proof.depth == 3
    # The shortest: cut right before the user message that holds the results.
    assert "(k=2)" in proof.counterexample
    assert "2:user results" in proof.counterexample


def _mutations(t: Transcript) -> list[Transcript]:
    """Single edits that may break validity: drop a block, drop a message."""
    out: list[Transcript] = []
    for i, m in enumerate(t):
        out.append(t[:i] + t[i + 1 :])
        for j in range(len(m.blocks)):
            out.append((*t[:i], Msg(m.role, m.blocks[:j] + m.blocks[j + 1 :]), *t[i + 1 :]))
    return out


@settings(max_examples=30)
@given(transcripts(max_turns=4), st.data())
def test_the_formula_agrees_with_provider_valid(t: Transcript, data: st.DataObject) -> None:
    assert valid_concrete(t) is (provider_valid(t) is None)
    mutants = _mutations(t)
    if mutants:
        m = data.draw(st.sampled_from(mutants))
        assert valid_concrete(m) is (provider_valid(m) is None), (m, provider_valid(m))


def test_the_formula_rejects_results_after_text() -> None:
    t = (
        Msg("user", (Block(BlockKind.TEXT),)),
        Msg("assistant", (Block(BlockKind.CALL, id="a"),)),
        Msg("user", (Block(BlockKind.TEXT), Block(BlockKind.RESULT, id="a"))),
    )
    assert not valid_concrete(t) and provider_valid(t) is not None
