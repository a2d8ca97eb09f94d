"""Proofs for every width (issue 25): the parametric loop system (`_widths.py`)."""

from __future__ import annotations

import pytest

from metis_model.smt import ABLATIONS, LoopConfig, LoopSession, LoopSystem, get_property, houdini
from metis_model.smt._widths import ALL_WIDTHS, Widths, family

WANTED = ("AUTH-1", "CLOSE-1", "CLOSE-3", "CLOSE-4", "CLOSE-5", "SCHED-1", "SCHED-2", "SCHED-3")


def test_lemma_families_name_every_instance_alike() -> None:
    assert family("exclusive-alone-0-2") == family("exclusive-alone-L.i-L.j") == "exclusive-alone"
    assert family("cleared-1") == "cleared" and family("batch-has-calls") == "batch-has-calls"


@pytest.fixture(scope="module")
def session() -> LoopSession:
    return LoopSession(depth=2)


@pytest.mark.parametrize("prop_id", WANTED)
def test_proved_for_all_widths(session: LoopSession, prop_id: str) -> None:
    r = session.prove(get_property(prop_id), None)
    assert r.scope.startswith(ALL_WIDTHS), r
    assert "≤ 2 rules per decision" in r.scope  # the one dimension left finite


def test_the_parametric_system_has_no_width_bound() -> None:
    system = LoopSystem(LoopConfig(parametric=True))
    p = system.params("x")
    text = str(system._wellformed(p))
    assert "<=" not in text  # no slot, job or batch-size bound


@pytest.mark.parametrize("ablation", ["retry-after-commit", "exclusive-as-safe", "queue-not-fifo"])
def test_never_proves_what_an_ablation_breaks(ablation: str) -> None:
    config = LoopConfig(ablations=frozenset({ablation}))
    invariant = houdini(LoopSystem(config))
    assert invariant is not None
    assert Widths(config, invariant, timeout_s=10).prove(ABLATIONS[ablation]) is None
