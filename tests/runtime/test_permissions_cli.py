"""`metis permissions check`: decision, stage and rule; one-line errors, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from metis_cli._permissions import infer_kind, input_paths, permissions
from metis_model.trace import ToolKind


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    f = tmp_path / ".metis" / "settings.json"
    f.parent.mkdir()
    f.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash", "Edit(src/**)"],
                    "deny": ["Bash(rm:*)", "Read(./.env)"],
                    "defaultMode": "acceptEdits",
                }
            }
        )
    )
    return f


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(permissions, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_is_a_click_group() -> None:
    assert isinstance(permissions, click.Group)
    assert "check" in permissions.commands


def test_deny_by_rule(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--tool", "bash", "--input", '{"command": "ls && rm -rf x"}'
    )
    assert code == 0
    assert "decision: deny" in out
    assert "stage:    deny_rule" in out
    assert "rule:     Bash(rm:*) (deny, project;" in out
    assert f"{settings}: permissions.deny[0]" in out
    assert "mode=acceptEdits" in out


def test_json_output(settings: Path, tmp_path: Path) -> None:
    code, out, _ = run(
        "--settings",
        str(settings),
        "--tool",
        "edit",
        "--input",
        json.dumps({"file_path": "src/a.py"}),
        "--mode",
        "default",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["decision"] == "allow"
    assert payload["stage"] == "allow_rule"
    assert payload["rule"]["pattern"] == "Edit(src/**)"
    assert payload["rule"]["source"] == "project"
    assert payload["facts"]["kind"] == "edit"


def test_bypass_immune_and_opaque(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--mode", "bypassPermissions", "--tool", "bash",
        "--input", '{"command": "eval $X"}',
    )  # fmt: skip
    assert code == 0
    assert "decision: ask" in out
    assert "stage:    bypass_immune" in out
    assert "rule:     none" in out
    assert "detail:   not fully analysable" in out


def test_secret_read_denied_by_rule(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--tool", "Read", "--input", '{"file_path": ".env"}'
    )
    assert code == 0
    assert "decision: deny" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tool", "bash", "--input", "{x"], "--input: not valid JSON"),
        (["--tool", "bash", "--input", "{\"a\": NaN}"], "--input: a: NaN is not a JSON number"),
        (["--tool", "bash", "--input", "[1]"], "--input: must be a JSON object"),
        (["--tool", "bash", "--mode", "yolo"], "--mode: unknown value 'yolo'"),
        (["--tool", "bash", "--source", "me"], "--source: unknown value 'me'"),
        (["--tool", "bash", "--kind", "risky"], "--kind: unknown value 'risky'"),
        (
            ["--tool", "bash", "--workspace", "/no/such/dir"],
            "--workspace: /no/such/dir: not a directory",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(settings: Path, args: list[str], message: str) -> None:
    code, out, err = run("--settings", str(settings), *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_bad_settings_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = run("--settings", str(missing), "--tool", "bash")
    assert (code, err.count("\n")) == (2, 1)
    assert f"{missing}: cannot read (No such file or directory)" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"permissions": {"deny": ["Bash("]}}')
    code, _, err = run("--settings", str(bad), "--tool", "bash")
    assert (code, err.count("\n")) == (2, 1)
    assert f"{bad}: permissions.deny[0]: malformed rule" in err


def test_kind_and_path_inference() -> None:
    assert infer_kind("bash", {"command": "ls"}) is ToolKind.READ_ONLY
    assert infer_kind("bash", {"command": "rm x"}) is ToolKind.EXEC
    assert infer_kind("Write", {}) is ToolKind.EDIT
    assert infer_kind("mcp__x__y", {}) is ToolKind.EXEC
    assert input_paths({"file_path": "a", "paths": ["b", 3], "path": "c"}) == ["a", "c", "b"]
