"""`metis permissions check` and `metis hook claude-code` decide alike: every
PreToolUse case of the hook's tests (`test_hook.CASES`) through both, under the
same settings hierarchy, mode and working directory (issue 26). A hook that
says nothing is an allow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._main import cli

from .test_hook import CASES
from .test_hook import decide
from .test_hook import fill
from .test_hook import project  # noqa: F401  (the fixture)


@pytest.mark.parametrize(("tool", "tool_input", "mode", "decision"), CASES)
def test_the_hook_and_permissions_check_agree(
    project: Path,  # noqa: F811
    tool: str,
    tool_input: dict[str, Any],
    mode: str,
    decision: str | None,
) -> None:
    filled = fill(tool_input, project)
    out = decide(project, tool, filled, permission_mode=mode)
    hook = out["hookSpecificOutput"]["permissionDecision"] if out is not None else "allow"
    result = CliRunner().invoke(cli, [
        "permissions", "check", "--json", "--mode", mode, "--tool", tool,
        "--input", json.dumps(filled), "--workspace", str(project),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    check = json.loads(result.stdout)["decision"]
    assert hook == check == (decision or "allow")


def test_the_comparison_can_fail(project: Path) -> None:  # noqa: F811
    """A check that cannot fail is a defect: the two differ when the hook's
    project is not the one `permissions check` reads."""
    other = project.parent / "other"
    other.mkdir()
    filled = {"command": "rm -rf build"}
    out = decide(project, "Bash", filled)
    result = CliRunner().invoke(cli, [
        "permissions", "check", "--json", "--tool", "Bash", "--input", json.dumps(filled),
        "--workspace", str(other), "--mode", "default",
    ])  # fmt: skip
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert json.loads(result.stdout)["decision"] != "deny"
