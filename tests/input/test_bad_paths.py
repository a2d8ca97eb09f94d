"""Issue 24's last bad inputs: a NUL byte in any path `metis permissions
check` is given, and `metis agents list --project` of a missing folder, are
one line naming the place and exit 2 (they were a `realpath` ValueError
traceback, and an empty list with exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._main import cli

from ._cli import run_metis


def _invoke(argv: list[str]) -> tuple[int, str]:
    # In-process: argv of a real process cannot hold a NUL, a caller's list can.
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.stderr


def _invoke_out(argv: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.stdout


def _one_line(code: int, stderr: str, *words: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, stderr
    assert "Traceback" not in stderr and "\x00" not in stderr  # shown escaped
    assert all(w in lines[0] for w in words), lines


@settings(max_examples=60, deadline=None)
@given(
    field=st.sampled_from(["file_path", "path", "notebook_path"]),
    tool=st.sampled_from(["read", "edit", "write", "glob", "grep", "notebookedit", "bash"]),
    before=st.text(max_size=8),
    after=st.text(max_size=8),
)
def test_a_nul_in_an_input_path_is_one_line(field: str, tool: str, before: str, after: str) -> None:
    tool_input = json.dumps({field: before + "\x00" + after})
    code, err = _invoke(["permissions", "check", "--tool", tool, "--input", tool_input])
    _one_line(code, err, "--input", field, "NUL")


def test_a_nul_in_a_list_of_paths_names_its_index() -> None:
    code, err = _invoke(
        ["permissions", "check", "--tool", "read", "--input", '{"paths": ["a", "b\\u0000"]}']
    )
    _one_line(code, err, "paths[1]", "NUL")


def test_a_nul_in_settings_or_workspace_is_one_line() -> None:
    code, err = _invoke(["permissions", "check", "--tool", "read", "--settings", "s\x00.json"])
    _one_line(code, err, "--settings", "NUL")
    code, err = _invoke(["permissions", "check", "--tool", "read", "--workspace", "w\x00"])
    _one_line(code, err, "--workspace", "NUL")


def test_a_nul_inside_a_settings_file_is_a_note_naming_the_field(tmp_path: Path) -> None:
    """Inside a settings file a NUL is the file's trouble, not the user's: as
    Claude Code skips what it cannot read, the directory is ignored with a note
    naming the field (a narrower scope lets no effect through), and a deny
    holding one fails closed as an ask on its tool (_salvage)."""
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(
        json.dumps({"permissions": {"additionalDirectories": ["/x\x00y"], "deny": ["Read(a\x00)"]}})
    )
    code, out = _invoke_out(
        [
            "permissions",
            "check",
            "--tool",
            "read",
            "--input",
            '{"file_path": "f"}',
            "--settings",
            str(settings_file),
        ]
    )
    assert code == 0, out
    assert "permissions.additionalDirectories[0]: contains a NUL byte, ignored" in out
    assert "decision: ask" in out and "permissions.deny[0]" in out


def test_a_nul_in_a_trace_path_is_one_line() -> None:
    code, err = _invoke(["conform", "trace\x00.jsonl"])
    _one_line(code, err, "NUL")


def test_agents_list_of_a_missing_project_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    outcome = run_metis(["agents", "list", "--project", str(missing)])
    assert outcome.code == 2, outcome
    assert len(outcome.error_lines) == 1 and "--project" in outcome.error_lines[0]
    assert "does not exist" in outcome.error_lines[0]
    (tmp_path / "file").write_text("")
    outcome = run_metis(["agents", "list", "--project", str(tmp_path / "file")])
    assert outcome.code == 2 and "--project" in outcome.error_lines[0]
    assert run_metis(["agents", "list", "--project", str(tmp_path)]).code == 0
