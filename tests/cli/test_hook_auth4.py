"""AUTH-4 on the Claude Code hook's trace (issue 23): each recorded verdict
carries its facts and the paths it decided on, and the trace records the
settings the gate read (`metis.permissions`, the form of `metis run`'s
`meta.permissions`), so `metis conform --format claude-code` derives each
call's facts from them. Every PreToolUse case of the hook's tests, recorded
by the real hook into one session, conforms with AUTH-4 exercised; the same
trace edited as a gate that forgot a deny rule would have written it is
rejected with AUTH-4; a verdict with no settings before it is a note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._main import cli

from .test_hook import CASES
from .test_hook import _event
from .test_hook import decide
from .test_hook import fill
from .test_hook import project  # noqa: F401  (the fixture)


def _session(project: Path) -> Path:  # noqa: F811
    for i, (tool, tool_input, mode, decision) in enumerate(CASES):
        call = f"toolu_{i:02d}"
        filled = fill(tool_input, project)
        decide(project, tool, filled, permission_mode=mode, tool_use_id=call)
        if decision != "deny":  # a denied call's answer the hook wrote itself
            _event(project, "PostToolUse", tool_name=tool, tool_input=filled,
                   tool_use_id=call, tool_response="ok")  # fmt: skip
    return project / ".metis" / "claude-code" / "abc123.jsonl"


def _conform(trace: Path) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["conform", "--format", "claude-code", str(trace), "--json"])
    assert done.exit_code in (0, 1), done.output
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _lines(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


def test_the_hook_records_its_settings_once_and_every_case_conforms(
    project: Path,  # noqa: F811
) -> None:
    trace = _session(project)
    verdicts = [r["metis"] for r in _lines(trace) if r["type"] == "assistant"]
    assert len(verdicts) == len(CASES) and all("facts" in v for v in verdicts)
    recorded = [v["permissions"] for v in verdicts if "permissions" in v]
    assert len(recorded) == 1  # the settings did not change: recorded once
    patterns = {r["pattern"] for r in recorded[0]["rules"]}
    assert {"Bash(rm *)", "Read(.env)", "Bash(git push *)"} <= patterns
    out = _conform(trace)
    assert out["ok"], out["violations"]
    assert out["checks"]["AUTH-4"] >= 5


def _forget(trace: Path, command_or_path: str, pattern: str) -> Path:
    """The trace as a gate that forgot the deny rule `pattern` would have
    written it for the call naming `command_or_path`: the rule gone from its
    facts, the decision an allow."""
    lines = _lines(trace)
    record = next(  # the first call naming it
        r for r in lines
        if r["type"] == "assistant"
        and command_or_path in json.dumps(r["message"]["content"][0]["input"])
    )  # fmt: skip
    verdict = record["metis"]
    assert verdict["decision"] == "deny"
    assert pattern in [r["pattern"] for r in verdict["facts"]["rules"]]
    verdict["facts"]["rules"] = [r for r in verdict["facts"]["rules"] if r["pattern"] != pattern]
    verdict["facts"]["secret"] = False
    verdict.update(decision="allow", stage="mode", rule=None)
    out = trace.with_name("forgetful.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return out


@pytest.mark.parametrize(
    ("needle", "pattern"),
    [("rm -rf build", "Bash(rm *)"), ("config/.env", "Read(.env)")],
)
def test_a_hook_trace_of_a_gate_that_forgot_a_deny_rule_is_auth_4(
    project: Path,  # noqa: F811
    needle: str,
    pattern: str,
) -> None:
    out = _conform(_forget(_session(project), needle, pattern))
    assert not out["ok"]
    (v,) = [v for v in out["violations"] if v["invariant"] == "AUTH-4"]
    assert pattern in v["message"]


def test_a_verdict_without_recorded_settings_is_a_note_not_a_pass(
    project: Path,  # noqa: F811
) -> None:
    trace = _session(project)
    lines = _lines(trace)
    for r in lines:
        if r["type"] == "assistant":
            r["metis"].pop("permissions", None)
    trace.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = _conform(trace)
    assert out["ok"] and not out["checks"].get("AUTH-4")
    assert any("AUTH-4 was not checked" in n["message"] for n in out["warnings"])
