"""Real settings files from public repositories (`tests/data/settings-corpus/`,
provenance and licence in `provenance.json`): each is read with no whole-file
refusal, and the calls in `expected.json` are decided as Claude Code's docs
say, or, where metis is deliberately stricter, as the case says and with the
stricter-than-Claude-Code table naming it (issue 26)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from metis_cli._permissions import infer_kind
from metis_cli._permissions import input_paths
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Loaded
from metis_runtime.permissions import SettingsFile
from metis_runtime.permissions import load_hierarchy
from metis_runtime.permissions import parse_mode
from metis_runtime.permissions import stricter_than_claude_code
from metis_trace import Route
from metis_trace import Source

CORPUS = Path(__file__).resolve().parent.parent / "data" / "settings-corpus"
PROVENANCE: list[dict[str, str]] = json.loads(
    (CORPUS / "provenance.json").read_text(encoding="utf-8")
)["files"]
CASES: list[dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))[
    "cases"
]
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC"}


def test_corpus_size_and_provenance() -> None:
    assert len(PROVENANCE) >= 20
    stored = {p.name for p in CORPUS.glob("*.json")} - {"provenance.json", "expected.json"}
    assert stored == {p["file"] for p in PROVENANCE}
    for entry in PROVENANCE:
        assert entry["repo"].count("/") == 1 and len(entry["commit"]) == 40, entry
        assert entry["license"] in PERMISSIVE, entry
    assert {c["file"] for c in CASES} == stored  # every file has calls decided under it


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each corpus file as the `.claude/settings.json` of its own project."""
    out = {}
    for entry in PROVENANCE:
        root = tmp_path_factory.mktemp(entry["file"].removesuffix(".json"))
        (root / ".claude").mkdir()
        shutil.copyfile(CORPUS / entry["file"], root / ".claude" / "settings.json")
        out[entry["file"]] = root.resolve()
    return out


def _project_settings(root: Path) -> tuple[Path, Loaded]:
    """A corpus project's settings file, and what loading it alone gives."""
    f = root / ".claude" / "settings.json"
    return f, load_hierarchy([SettingsFile(f, "project", Source.PROJECT, root)])


@pytest.mark.parametrize("entry", PROVENANCE, ids=lambda e: e["file"])
def test_every_file_is_read_without_refusal(
    entry: dict[str, str], projects: dict[str, Path]
) -> None:
    f, loaded = _project_settings(projects[entry["file"]])
    data = json.loads(f.read_text(encoding="utf-8"))
    written = sum(len(data.get("permissions", {}).get(k, [])) for k in ("allow", "ask", "deny"))
    lost = sum(1 for note in loaded.notes if " not read (" in note)
    assert len(loaded.policy.rules) + lost >= written  # nothing vanished unannounced


def _fill(value: Any, ws: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{ws}", str(ws))
    if isinstance(value, dict):
        return {k: _fill(v, ws) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ws) for v in value]
    return value


def _id(case: dict[str, Any]) -> str:
    call = case["call"]
    shown = call["input"].get("command") or call["input"].get("file_path") or ""
    return f"{case['file']}:{case['list']}:{case['rule']}:{call['tool']}:{shown}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_decisions_match_the_documented_semantics(
    case: dict[str, Any], projects: dict[str, Path]
) -> None:
    root = projects[case["file"]]
    _, loaded = _project_settings(root)
    mode, auto = parse_mode(case["mode"], "mode")
    gate = Gate(loaded.policy, mode, root, Route.HEADLESS, auto=auto)
    tool = case["call"]["tool"]
    tool_input = _fill(case["call"]["input"], root)
    command = tool_input.get("command") if isinstance(tool_input.get("command"), str) else None
    kind = infer_kind(tool, tool_input)
    decision = gate.decide(tool, tool_input, kind, input_paths(tool_input), command)
    assert decision.decision.value == case["expected"], (case["basis"], decision.detail)
    stricter = stricter_than_claude_code(decision, auto=auto, policy=loaded.policy)
    if case["stricter"]:
        assert stricter, f"stricter ({case['stricter']}) but the table does not name it"
