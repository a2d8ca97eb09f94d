"""`metis permissions check` and `metis hook claude-code` decide alike on every
permission case of the tests (issue 26), not only the hook's own: each row
of `tests/data/permissions/documented_semantics.yaml`, each call of the real
settings corpus (`tests/data/settings-corpus/expected.json`), and each
control and shape of the bypass corpus (`bypass_corpus.yaml`), written as a
project's `.claude/settings.json` and decided through both commands. Each
also gets the decision its table gives (a shape: never allow). The hook's
own cases are `test_hook_check_agree.py`; the shell-read table's,
`tests/runtime/test_permissions_shell_reads.py`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._hook import claude_code
from metis_cli._permissions import permissions
from tests.runtime import _corpus as bypass
from tests.runtime.test_permissions_documented import ROWS
from tests.runtime.test_permissions_documented import _input
from tests.runtime.test_settings_corpus import CASES as CORPUS_CASES
from tests.runtime.test_settings_corpus import CORPUS
from tests.runtime.test_settings_corpus import _fill
from tests.runtime.test_settings_corpus import _id


def _both(root: Path, mode: str, tool: str, tool_input: dict[str, Any]) -> tuple[str, str]:
    """(the hook's decision, `permissions check`'s) for one call made in `root`."""
    payload = {
        "session_id": "every-case", "transcript_path": str(root / "t.jsonl"), "cwd": str(root),
        "permission_mode": mode, "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": "toolu_every",
    }  # fmt: skip
    ran = CliRunner().invoke(claude_code, ["--no-trace"], input=json.dumps(payload))
    assert ran.exit_code == 0, ran.output
    out = ran.stdout.strip()
    hook = json.loads(out)["hookSpecificOutput"]["permissionDecision"] if out else "allow"
    checked = CliRunner().invoke(permissions, [
        "check", "--json", "--workspace", str(root), "--mode", mode, "--tool", tool,
        "--input", json.dumps(tool_input),
    ])  # fmt: skip
    assert checked.exit_code == 0, checked.output
    return str(hook), str(json.loads(checked.stdout)["decision"])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user level and managed level: only the project's file decides."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp_path / "managed"))
    monkeypatch.setenv("METIS_HOOK_HELPER", "0")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return Path(os.path.realpath(home))


def _project(root: Path, permissions: dict[str, Any]) -> Path:
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": permissions}))
    return Path(os.path.realpath(root))


@pytest.mark.parametrize("row", ROWS, ids=[r["statement"][:70] for r in ROWS])
def test_documented_rows(row: dict[str, Any], tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    for d in (ws / "src", ws / "secrets"):
        d.mkdir(parents=True)
    (ws / "secret.txt").write_text("s\n")
    for link, target in row.get("setup", {}).get("links", {}).items():
        (ws / link).symlink_to(target)
    ws = _project(ws, row.get("rules", {}))
    call = row["call"]
    hook, check = _both(ws, row.get("mode", "default"), call["tool"], _input(call, ws, home))
    assert hook == check == row["expect"]


@pytest.fixture(scope="module")
def corpus_projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in sorted({c["file"] for c in CORPUS_CASES}):
        root = tmp_path_factory.mktemp(name.removesuffix(".json"))
        (root / ".claude").mkdir()
        shutil.copyfile(CORPUS / name, root / ".claude" / "settings.json")
        out[name] = Path(os.path.realpath(root))
    return out


@pytest.mark.parametrize("case", CORPUS_CASES, ids=_id)
def test_settings_corpus_calls(
    case: dict[str, Any], corpus_projects: dict[str, Path], home: Path
) -> None:
    root = corpus_projects[case["file"]]
    tool_input = _fill(case["call"]["input"], root)
    hook, check = _both(root, case["mode"], case["call"]["tool"], tool_input)
    assert hook == check == case["expected"], case["basis"]


CONTROLS = bypass.controls()
SHAPES = bypass.shapes()


@pytest.mark.parametrize("entry", CONTROLS, ids=[repr(c["command"])[:60] for c in CONTROLS])
def test_bypass_controls(entry: dict[str, Any], tmp_path: Path, home: Path) -> None:
    ws = _project(
        bypass.workspace(tmp_path / "ws"), {"deny": entry["deny"], "allow": entry["allow"]}
    )
    hook, check = _both(ws, entry["mode"], "Bash", {"command": entry["command"]})
    assert hook == check == entry["expect"]


@pytest.mark.parametrize("entry", SHAPES, ids=[repr(s["command"])[:60] for s in SHAPES])
def test_bypass_shapes(entry: dict[str, Any], tmp_path: Path, home: Path) -> None:
    rules = {"deny": entry.get("deny", ["Bash(rm:*)"]), "allow": entry.get("allow", ["Bash"])}
    ws = _project(bypass.workspace(tmp_path / "ws"), rules)
    for mode in ("default", "dontAsk"):
        hook, check = _both(ws, mode, "Bash", {"command": entry["command"]})
        assert hook == check != "allow", mode


def test_the_comparison_can_fail(tmp_path: Path, home: Path) -> None:
    """A check that cannot fail is a defect: a deny the project holds is
    seen by the hook made there, not by a check of another folder."""
    ws = _project(tmp_path / "ws", {"deny": ["Bash(rm *)"]})
    other = _project(tmp_path / "other", {})
    hook, _ = _both(ws, "default", "Bash", {"command": "rm -rf build"})
    _, check = _both(other, "default", "Bash", {"command": "rm -rf build"})
    assert hook == "deny" != check
