"""The model's studies: permission modes over the fact space, the loop
ablations, the coverage profile and RQ1's snapshot conformance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metis_check import check_trace
from metis_check import simulate
from metis_model import INVARIANTS
from metis_studies.conformance import Unit
from metis_studies.conformance import all_transitions
from metis_studies.conformance import coverage_profile
from metis_studies.conformance import frozen_corpus
from metis_studies.conformance import snapshot_conformance
from metis_studies.model_ablations import model_ablations
from metis_studies.permission_modes import decision_map
from metis_studies.permission_modes import permission_modes
from metis_trace import Decision
from metis_trace import Mode


def test_the_mode_order_holds_and_deny_first_is_strictly_safer() -> None:
    r = permission_modes()
    assert r.order_violations == 0 and r.ordered_pairs > 0
    counts = {m: dict(c) for m, c in r.decisions}
    assert all(sum(c.values()) == r.combinations_per_mode for c in counts.values())
    assert counts[Mode.DONT_ASK][Decision.ASK] == 0  # dontAsk never asks
    assert sum(n for _, n in r.loosened) > 0 and r.ok


def test_a_decision_map_reads_the_model() -> None:
    m = decision_map("deny rule")
    assert {d for row in m.decisions for d in row} == {Decision.DENY}
    free = decision_map("no rule")
    row = free.decisions[free.modes.index(Mode.DEFAULT)]
    assert row[free.columns.index("read_only")] is Decision.ALLOW
    assert row[free.columns.index("edit")] is Decision.ASK


def test_an_ablation_is_refuted_and_the_checker_confirms_it() -> None:
    (r,) = model_ablations(["child-gate-not-cloned"])
    assert r.found and r.confirmed and r.invariant == "CHILD-2"
    assert r.depth is not None and r.depth >= 1 and "CHILD-2" in r.checker_says
    with pytest.raises(ValueError, match="unknown ablation 'nope'"):
        model_ablations(["nope"])


def test_the_coverage_profile_counts_every_id_and_transition() -> None:
    reports = [check_trace(e, h) for h, e in (simulate(s) for s in range(20))]
    p = coverage_profile(reports)
    assert p.reports == 20
    assert [i for i, _ in p.invariants] == [inv.id for inv in INVARIANTS]
    assert [t for t, _ in p.transitions] == all_transitions()
    checked = {i for i, n in p.invariants if n}
    assert checked and set(p.never_checked) == {inv.id for inv in INVARIANTS} - checked
    assert 0 < p.invariant_share < 1 and 0 < p.transition_share <= 1
    total = {t: 0 for t in all_transitions()}
    for r in reports:
        for t, n in r.transitions.items():
            total[t] += n
    assert dict(p.transitions) == total


def test_the_frozen_corpus_conforms_leaf_by_leaf() -> None:
    units = frozen_corpus()
    formats = {u.format for u in units}
    assert {"claude-code", "auto"} <= formats and len(units) >= 12
    result = snapshot_conformance(units)
    assert result.failed == 0 and result.passed > 100
    assert set(result.decided) <= set(result.applicable)
    assert result.coverage_of_all == len(result.decided) / len(INVARIANTS)


def test_a_broken_transcript_gives_fail_leaves(tmp_path: Path) -> None:
    # An Anthropic request whose tool_use is never answered (CLOSE-2 via ANT-1).
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "never answered"}]},
        ],
    }  # fmt: skip
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    (unit,) = snapshot_conformance([Unit(path, "anthropic")]).units
    assert unit.verdict == "violates" and unit.failed >= 1
    assert unit.failures and "CLOSE-2" in unit.failures[0]
