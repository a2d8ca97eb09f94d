"""The bypass corpus, its controls, and the old parser's decisions against the
new (`tests/data/permissions/bypass_corpus.yaml`, `old_decisions.json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from metis_trace import Decision
from metis_trace import Mode
from tests.runtime import _corpus as corpus

SHAPES = corpus.shapes()
CONTROLS = corpus.controls()
OLD = json.loads(corpus.OLD_DECISIONS.read_text(encoding="utf-8"))["decisions"]

# Where the new gate is more permissive than the bashlex one, and why.
LOOSER = {
    "plain": "bashlex could not parse it (forced ask); the grammar reads it and its parts get their own decision",
    "edit": "acceptEdits auto-approves in-workspace file commands (mkdir touch rm rmdir mv cp sed, redirections), as documented",
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return corpus.workspace(tmp_path_factory.mktemp("corpus") / "ws")


def _modes(entry: dict[str, Any]) -> list[Mode]:
    if entry.get("modes") == "not_bypass":
        return [m for m in Mode if m is not Mode.BYPASS]
    return list(Mode)


def test_corpus_size_and_sources() -> None:
    new = [s for s in SHAPES if not s["source"].startswith("metis corpus v1")]
    assert len(new) >= 60
    assert all(s["source"] for s in SHAPES)
    cited = [
        s for s in new if "#" in s["source"] or "docs" in s["source"] or "changelog" in s["source"]
    ]
    assert len(cited) >= 30


@pytest.mark.parametrize("entry", SHAPES, ids=[repr(s["command"])[:60] for s in SHAPES])
def test_shape_ends_in_ask_or_deny(entry: dict[str, Any], ws: Path) -> None:
    for mode in _modes(entry):
        d = corpus.decide(entry, mode, ws)
        assert d.decision is not Decision.ALLOW, (mode, d.stage, d.detail)
        if mode is Mode.DONT_ASK:
            assert d.decision is Decision.DENY, (d.stage, d.detail)
    if entry.get("modes") == "all_opaque":
        assert "not fully analysable" in corpus.decide(entry, Mode.DEFAULT, ws).detail


@pytest.mark.parametrize("entry", CONTROLS, ids=[repr(c["command"])[:60] for c in CONTROLS])
def test_control_gets_the_decision_of_its_parts(entry: dict[str, Any], ws: Path) -> None:
    policy = corpus.shape_policy({"deny": entry["deny"], "allow": entry["allow"]})
    d = corpus.decide(entry, Mode(entry["mode"]), ws, policy, infer=True)
    assert d.decision.value == entry["expect"], (d.stage, d.detail, d.facts)


def _looser_reason(command: str, key: str, old: str, new: str) -> str | None:
    """Why a decision became more permissive, or None when it must not have."""
    if key.startswith("plain:") and old == "ask" and new == "allow":
        return LOOSER["plain"]
    if key == "plain:acceptEdits" and new == "allow":
        return LOOSER["edit"]
    return None


def test_old_parser_against_new(ws: Path) -> None:
    """Every corpus command: the new decision is the same or stricter than
    bashlex's, or more permissive for a reason in LOOSER."""
    looser: dict[str, list[str]] = {}
    compared = 0
    for entry in [*SHAPES, *CONTROLS]:
        command = entry["command"]
        for key, old in OLD.get(command, {}).items():
            scenario, mode = key.split(":")
            if scenario == "rules":
                if entry not in SHAPES:
                    continue
                new = corpus.decide(entry, Mode(mode), ws).decision.value
            else:
                new = corpus.plain(command, Mode(mode), ws).decision.value
            compared += 1
            if corpus.RANK[Decision(new)] > corpus.RANK[Decision(old)]:
                reason = _looser_reason(command, key, old, new)
                assert reason is not None, (command, key, old, new)
                looser.setdefault(reason, []).append(f"{command!r} {key}")
    assert compared >= 1500
    # The looser cases are the parser fixes and acceptEdits's file commands only.
    assert set(looser) <= set(LOOSER.values())
