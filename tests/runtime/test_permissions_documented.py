"""Claude Code's documented permission semantics, one row per statement
(`tests/data/permissions/documented_semantics.yaml`), each decided by the
real gate the way `metis permissions check` and the hook decide."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from metis_cli._permissions import infer_kind
from metis_cli._permissions import input_paths
from metis_model import resolve
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import parse_mode
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

TABLE = (
    Path(__file__).resolve().parent.parent / "data" / "permissions" / "documented_semantics.yaml"
)
ROWS: list[dict[str, Any]] = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["rows"]


def _input(call: dict[str, Any], ws: Path, home: Path) -> dict[str, Any]:
    tool_input: dict[str, Any] = dict(call.get("input", {}))
    if "command" in call:
        tool_input["command"] = call["command"]
    if "url" in call:
        tool_input["url"] = call["url"]
    if "path" in call:
        raw = str(call["path"])
        path = home / raw[2:] if raw.startswith("~/") else ws / raw
        key = "path" if call["tool"].lower() in ("grep", "glob", "ls") else "file_path"
        tool_input[key] = str(path)
    return tool_input


@pytest.mark.parametrize("row", ROWS, ids=[r["statement"][:70] for r in ROWS])
def test_documented_statement(
    row: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    for d in (ws / "src", ws / "secrets", home):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (ws / "secret.txt").write_text("s\n")
    for link, target in row.get("setup", {}).get("links", {}).items():
        (ws / link).symlink_to(target)
    policy = Policy()
    for behavior, patterns in row.get("rules", {}).items():
        for pattern in patterns:
            policy.add(Source.PROJECT, RuleBehavior(behavior), pattern, base=ws)
    mode, auto = parse_mode(row.get("mode", "default"), "mode")
    gate = Gate(policy, mode, Path(os.path.realpath(ws)), Route.HEADLESS, auto=auto,
                search_hides_denied=True)  # fmt: skip
    call = row["call"]
    tool_input = _input(call, Path(os.path.realpath(ws)), Path(os.path.realpath(home)))
    d = gate.decide(call["tool"], tool_input, infer_kind(call["tool"], tool_input),
                    input_paths(tool_input))  # fmt: skip
    assert d.decision is Decision(row["expect"]), (d.stage, d.detail, d.facts)
    assert resolve(d.facts).decision is d.decision  # the model agrees (PERM-1)
    if "claude_code" in row:  # deliberately stricter, and said why
        assert row["why"]
        rank = {"deny": 0, "ask": 1, "allow": 2}
        assert rank[row["expect"]] < rank[row["claude_code"]]


def test_every_row_has_a_source() -> None:
    assert len(ROWS) >= 80
    for row in ROWS:
        assert row["url"].startswith("https://"), row
        assert set(row) <= {"statement", "url", "rules", "mode", "call", "expect", "setup",
                            "claude_code", "why"}  # fmt: skip
        assert Mode(parse_mode(row.get("mode", "default"), "mode")[0])
