"""`metis hook claude-code` with the documented hook payloads
(https://code.claude.com/docs/en/hooks: common fields, PreToolUse,
PostToolUse, Stop), malformed ones (a warning and exit 0, never a wedged
session; a PreToolUse call with an effect that cannot be decided is denied
with a reason), and the hook trace that `metis conform` checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._hook import claude_code
from metis_cli._main import cli


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root, home = tmp_path / "proj", tmp_path / "home"
    (root / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp_path / "managed"))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("METIS_HOOK_HELPER", "0")  # in this process (tests/cli/test_hook_helper.py)
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {
        "allow": ["Bash(npm test)", "mcp__github__get_issue"],
        "deny": ["Bash(rm *)", "Read(.env)", "WebFetch(domain:evil.example)", "mcp__slack"],
    }}))  # fmt: skip
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"ask": ["Bash(git push *)"]}})
    )
    return root


def payload(project: Path, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A PreToolUse payload as the hooks reference documents it."""
    base = {
        "session_id": "abc123",
        "prompt_id": "p-1",
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "effort": "medium",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01ABC",
    }
    base.update(extra)
    return base


def run(stdin: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(claude_code, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def decide(project: Path, tool: str, tool_input: dict[str, Any], **extra: Any) -> Any:
    code, out, err = run(json.dumps(payload(project, tool, tool_input, **extra)))
    assert code == 0, err
    return json.loads(out) if out.strip() else None


# Every PreToolUse case of these tests: (tool, input, mode, decision; None: no
# decision). `tests/cli/test_hook_check_agree.py` runs each through
# `metis permissions check` too. `{p}` is the project.
CASES: list[tuple[str, dict[str, Any], str, str | None]] = [
    ("Bash", {"command": "rm -rf build", "description": "clean"}, "default", "deny"),
    ("Bash", {"command": "timeout 5 bash -c 'rm -rf build'"}, "default", "deny"),
    ("Bash", {"command": "FOO=1 rm x"}, "default", "deny"),
    ("Bash", {"command": "git push origin main"}, "default", "ask"),
    ("Bash", {"command": "python3 -c 'import os'"}, "default", "ask"),
    ("Bash", {"command": "npm test"}, "default", None),
    ("Bash", {"command": "ls -la && git status"}, "default", None),
    ("Bash", {"command": "make"}, "dontAsk", "deny"),
    ("Read", {"file_path": "{p}/config/.env"}, "default", "deny"),
    ("Read", {"file_path": "{p}/README.md"}, "default", None),
    ("Edit", {"file_path": "{p}/.env", "old_string": "a", "new_string": "b"}, "default", "deny"),
    ("Write", {"file_path": "{p}/.husky/pre-commit", "content": "x"}, "default", "ask"),
    ("Write", {"file_path": "{p}/.husky/pre-commit", "content": "x"}, "bypassPermissions", "ask"),
    ("Write", {"file_path": "{p}/src/a.py", "content": "x"}, "default", "ask"),
    ("Write", {"file_path": "{p}/src/a.py", "content": "x"}, "acceptEdits", None),
    ("Write", {"file_path": "{p}/src/a.py", "content": "x"}, "plan", "deny"),
    ("WebFetch", {"url": "https://evil.example/x", "prompt": "p"}, "default", "deny"),
    ("WebFetch", {"url": "https://example.com", "prompt": "p"}, "default", "ask"),
    ("mcp__slack__post_message", {"channel": "x"}, "default", "deny"),
    ("mcp__github__get_issue", {"n": 1}, "default", None),
    ("mcp__github__create_issue", {"title": "x"}, "default", "ask"),
    # Grep and Glob hide denied files (Claude Code 2.1.162): a search above
    # `.env` is not denied whole; one rooted at a denied path is.
    ("Grep", {"pattern": "TODO"}, "default", None),
    ("Grep", {"pattern": "TODO", "path": "{p}/config"}, "default", None),
    ("Grep", {"pattern": "KEY", "path": "{p}/config/.env"}, "default", "deny"),
    ("Glob", {"pattern": "**/*"}, "default", None),
    ("Glob", {"pattern": "*", "path": "{p}"}, "default", None),
    ("Glob", {"pattern": "*", "path": "{p}/.env"}, "default", "deny"),
]


def fill(tool_input: dict[str, Any], project: Path) -> dict[str, Any]:
    return {k: v.replace("{p}", str(project)) if isinstance(v, str) else v
            for k, v in tool_input.items()}  # fmt: skip


@pytest.mark.parametrize(("tool", "tool_input", "mode", "decision"), CASES)
def test_pre_tool_use_decisions(
    project: Path, tool: str, tool_input: dict[str, Any], mode: str, decision: str | None
) -> None:
    out = decide(project, tool, fill(tool_input, project), permission_mode=mode)
    if decision is None:
        assert out is None  # metis allows: Claude Code's own rules and prompts decide
        return
    specific = out["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == decision
    assert specific["permissionDecisionReason"].startswith(f"metis: {decision} at ")


def test_the_reason_names_the_rule_and_its_file(project: Path) -> None:
    out = decide(project, "Bash", {"command": "FOO=1 rm x"})
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "rule Bash(rm *)" in reason
    assert f"{project / '.claude' / 'settings.json'}: permissions.deny[0]" in reason


def test_modes_come_from_the_payload(project: Path) -> None:
    write = {"file_path": str(project / "src" / "a.py"), "content": "x"}
    assert decide(project, "Write", write, permission_mode="acceptEdits") is None
    out = decide(project, "Write", write, permission_mode="plan")
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    out = decide(project, "Bash", {"command": "make"}, permission_mode="dontAsk")
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    husky = {"file_path": str(project / ".husky" / "pre-commit"), "content": "x"}
    out = decide(project, "Write", husky, permission_mode="bypassPermissions")
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "stricter than Claude Code: bypassPermissions allows protected paths" in reason


def test_pass_allow(project: Path) -> None:
    code, out, _ = run(
        json.dumps(payload(project, "Bash", {"command": "npm test"})), "--pass-allow"
    )
    assert code == 0
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_project_dir_from_the_environment(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = project / "pkg"
    sub.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    out = decide(project, "Bash", {"command": "rm x"}, cwd=str(sub))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def _stdin(project: Path, stdin: str, tool: str = "Bash") -> str:
    if not stdin.startswith("PAYLOAD:"):
        return stdin
    key, _, value = stdin[len("PAYLOAD:") :].partition("=")
    body = payload(project, tool, {"command": "ls", "file_path": str(project / "a")})
    body[key] = json.loads(value) if value[:1] in "[0123456789" else value
    return json.dumps(body)


@pytest.mark.parametrize(
    ("stdin", "message", "bash", "read"),
    [
        # Not a payload at all: the event is unknown, so nothing is blocked...
        ("", "<stdin>", None, None),
        ("not json", "<stdin>", None, None),
        ("[1, 2]", "must be a JSON object", None, None),
        ('{"a": NaN}', "<stdin>", None, None),
        # ... unless it names PreToolUse: a call, refused with the reason.
        ('{"hook_event_name": "PreToolUse", "a": NaN}', "<stdin>", "deny", "deny"),
        ('{"hook_event_name": "PreToolUse"}', "field 'tool_name' is missing", "deny", "deny"),
        ("PAYLOAD:hook_event_name=Notify", "is not one metis handles", None, None),
        ("PAYLOAD:hook_event_name=7", "is not one metis handles", None, None),
        ("PAYLOAD:tool_input=[1]", "field 'tool_input' must be an object", "deny", None),
        ("PAYLOAD:tool_name=7", "field 'tool_name' must be a string", "deny", "deny"),
        ("PAYLOAD:tool_use_id=7", "field 'tool_use_id' must be a string", "deny", None),
        ("PAYLOAD:cwd=relative/dir", "is not an absolute directory", "deny", None),
        # Decided all the same: the mode as default, the call not recorded.
        ("PAYLOAD:permission_mode=yolo", "unknown mode 'yolo'", None, None),
        ("PAYLOAD:session_id=../../etc", "field 'session_id' must be", None, None),
    ],
)
def test_malformed_payload_never_blocks_but_an_effect_is_refused(
    project: Path, stdin: str, message: str, bash: str | None, read: str | None
) -> None:
    """One warning line and exit 0 (exit 2 would make Claude Code refuse to
    end a turn, or block every call); a call with an effect that metis cannot
    decide is denied with a reason the model reads; a Read is left to Claude
    Code's own rules."""
    for tool, expected in (("Bash", bash), ("Read", read)):
        code, out, err = run(_stdin(project, stdin, tool))
        assert code == 0
        assert err.count("\n") == 1 and message in err, err
        assert err.startswith("metis hook claude-code: ")
        if expected is None:
            assert out == ""
            continue
        specific = json.loads(out)["hookSpecificOutput"]
        assert specific["permissionDecision"] == expected
        assert specific["permissionDecisionReason"].startswith("metis: deny: ")
    assert not list(project.glob(".metis/claude-code/*.jsonl")) or "session_id" not in stdin


def test_an_unknown_mode_gives_only_a_deny(project: Path) -> None:
    """A deny rule refuses in every mode; an ask depends on the mode, so under
    a mode metis does not know there is none (Claude Code's rules decide)."""
    body = json.dumps(payload(project, "Bash", {"command": "rm -rf build"}, permission_mode="yolo"))
    code, out, err = run(body)
    assert code == 0 and "decided as default, and only a deny is given" in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    push = payload(project, "Bash", {"command": "git push origin main"}, permission_mode="yolo")
    code, out, err = run(json.dumps(push))
    assert (code, out) == (0, "") and "unknown mode 'yolo'" in err
    assert decide(project, "Bash", {"command": "git push origin main"}) is not None  # a real ask


def test_a_bad_settings_file_fails_closed_only_for_effects(project: Path) -> None:
    (project / ".claude" / "settings.local.json").write_text('{"permissions": ')
    code, out, err = run(json.dumps(payload(project, "Bash", {"command": "ls"})))
    assert (code, err.count("\n")) == (0, 1)
    assert "settings.local.json" in err
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert (
        reason.startswith("metis: deny: metis cannot decide this call")
        and "settings.local" in reason
    )
    code, out, err = run(json.dumps(payload(project, "Grep", {"pattern": "x"})))
    assert (code, out, err.count("\n")) == (0, "", 1)


def test_a_rule_metis_cannot_read_is_no_refusal(project: Path) -> None:
    """Claude Code skips a malformed rule; so does metis (a lost allow is
    dropped), and the call is decided by the rest (issue 26)."""
    (project / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": ["*"]}}')
    code, out, _ = run(json.dumps(payload(project, "Bash", {"command": "ls"})))
    assert (code, out) == (0, "")


def _event(project: Path, event: str, **fields: Any) -> None:
    body = {k: v for k, v in payload(project, "Bash", {"command": "x"}).items()
            if k not in ("tool_name", "tool_input", "tool_use_id")}  # fmt: skip
    body.update(hook_event_name=event, **fields)
    code, _, err = run(json.dumps(body))
    assert code == 0, err


def _conform(path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["conform", "--format", "claude-code", str(path), *extra])
    return result.exit_code, result.output


def test_the_hook_trace_conforms(project: Path) -> None:
    calls = [("toolu_1", "ls"), ("toolu_2", "rm -rf build"), ("toolu_3", "npm test")]
    for call_id, command in calls:
        decide(project, "Bash", {"command": command}, tool_use_id=call_id)
        if call_id != "toolu_2":  # denied: Claude Code answers it; the hook wrote the result
            _event(project, "PostToolUse", tool_name="Bash", tool_input={"command": command},
                   tool_use_id=call_id, tool_response={"stdout": "ok", "stderr": ""},
                   duration_ms=12)  # fmt: skip
    decide(project, "Read", {"file_path": str(project / "a")}, tool_use_id="toolu_4")
    _event(project, "PostToolUseFailure", tool_name="Read", tool_input={}, tool_use_id="toolu_4",
           error="File does not exist")  # fmt: skip
    _event(project, "Stop", stop_hook_active=False, last_assistant_message="done")
    trace = project / ".metis" / "claude-code" / "abc123.jsonl"
    assert oct(trace.stat().st_mode & 0o777) == "0o600"
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["type"] for r in lines] == ["assistant", "user"] * 4 + ["system"]
    assert lines[2]["metis"]["decision"] == "deny" and lines[3]["message"]["content"][0]["is_error"]
    code, out = _conform(trace)
    assert code == 0, out
    assert "conforms" in out


def test_an_open_call_in_the_hook_trace_is_reported(project: Path) -> None:
    decide(project, "Bash", {"command": "ls"}, tool_use_id="toolu_A")
    trace = project / ".metis" / "claude-code" / "abc123.jsonl"
    code, out = _conform(trace)
    assert code == 1 and "open-at-end" in out
    assert _conform(trace, "--allow", "open-at-end")[0] == 0
    decide(project, "Bash", {"command": "pwd"}, tool_use_id="toolu_B")  # parallel: same message
    _event(project, "PostToolUse", tool_name="Bash", tool_input={}, tool_use_id="toolu_B",
           tool_response="x")  # fmt: skip
    decide(project, "Bash", {"command": "ls"}, tool_use_id="toolu_C")
    code, out = _conform(trace)
    assert code == 1 and "CLOSE-2" in out and "toolu_A" in out


def test_results_are_redacted_before_they_are_cut(project: Path) -> None:
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    decide(project, "Bash", {"command": "env"}, tool_use_id="toolu_S")
    _event(project, "PostToolUse", tool_name="Bash", tool_input={}, tool_use_id="toolu_S",
           tool_response={"stdout": "x" * 3990 + secret})  # fmt: skip
    text = (project / ".metis" / "claude-code" / "abc123.jsonl").read_text()
    assert secret not in text and "AKIA" not in text.split("toolu_S")[-1][-40:]


def test_real_process_on_stdin(project: Path) -> None:
    body = json.dumps(payload(project, "Bash", {"command": "rm -rf /"}))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for argv in (["-m", "metis_cli", "hook", "claude-code"], ["-m", "metis_cli._hook_client"]):
        done = subprocess.run(
            [sys.executable, *argv, "--no-trace"],
            input=body, capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert not (project / ".metis").exists()
        bad = subprocess.run(
            [sys.executable, *argv],
            input="{", capture_output=True, text=True, env=env, timeout=60, check=False,
        )  # fmt: skip
        assert bad.returncode == 0 and bad.stderr.count("\n") == 1 and bad.stdout == ""


def _state(project: Path) -> Path:
    return project / ".metis" / "claude-code" / "abc123.jsonl.state.json"


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ('{"threads": {}, "threads": {}}', "duplicate key"),
        ("[1]", "JSON object"),
        ("{not json", "line 1"),
        ('{"threads": {"main": {"last": 3}}}', "threads.main"),
    ],
)
def test_a_corrupt_state_is_set_aside_and_the_session_goes_on(
    project: Path, bad: str, says: str
) -> None:
    """The state (`<trace>.state.json`) is metis's own bookkeeping: a bad one
    is renamed `<name>.corrupt-<time>`, with one warning, and the trace goes
    on from a fresh state; neither a call nor the Stop is blocked."""
    decide(project, "Bash", {"command": "ls"}, tool_use_id="toolu_1")
    state = _state(project)
    assert json.loads(state.read_text())["threads"]
    state.write_text(bad)
    code, out, err = run(json.dumps(payload(project, "Bash", {"command": "rm -rf build"})))
    assert code == 0 and says in err and len(err.strip().splitlines()) == 1, err
    assert str(state) in err and "set aside as abc123.jsonl.state.json.corrupt-" in err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    aside = list(state.parent.glob("abc123.jsonl.state.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == bad
    assert json.loads(state.read_text())["threads"]["main"]["last"]  # a fresh state
    state.write_text(bad)
    _event(project, "Stop", stop_hook_active=False, last_assistant_message="done")
    assert len(list(state.parent.glob("abc123.jsonl.state.json.corrupt-*"))) == 2


def test_a_state_that_is_not_a_regular_file_is_never_moved(project: Path) -> None:
    decide(project, "Bash", {"command": "ls"}, tool_use_id="toolu_1")
    state = _state(project)
    state.unlink()
    os.mkfifo(state)  # would block a reader: never opened, never renamed
    code, out, err = run(json.dumps(payload(project, "Bash", {"command": "rm -rf build"})))
    assert code == 0 and "not a regular file" in err and "not recorded" in err, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    _event(project, "Stop", stop_hook_active=False, last_assistant_message="done")
    assert state.is_fifo()


def test_a_call_the_user_rejected_in_the_dialog_is_answered_not_left_open(project: Path) -> None:
    # Claude Code runs no PostToolUse for a call its user rejected; it answers the
    # model with an error. The hook writes that answer (no false CLOSE-2), only for
    # a call metis sent to the dialog (ask): a plain allowed call left open is a finding.
    trace = project / ".metis" / "claude-code" / "abc123.jsonl"
    decide(project, "Bash", {"command": "git push origin main"}, tool_use_id="toolu_R1")
    decide(project, "Bash", {"command": "npm test"}, tool_use_id="toolu_N")  # the next turn
    _event(project, "PostToolUse", tool_name="Bash", tool_input={}, tool_use_id="toolu_N",
           tool_response="ok")  # fmt: skip
    decide(project, "Bash", {"command": "git push origin dev"}, tool_use_id="toolu_R2")
    _event(project, "Stop", stop_hook_active=False, last_assistant_message="ok")
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    answers = {
        block["tool_use_id"]: block
        for r in lines if r["type"] == "user" for block in r["message"]["content"]
    }  # fmt: skip
    for rejected in ("toolu_R1", "toolu_R2"):
        assert answers[rejected]["is_error"] and "did not approve" in answers[rejected]["content"]
    assert [r["metis"]["decision"] for r in lines if r["type"] == "assistant"] == [
        "ask",
        "allow",
        "ask",
    ]
    code, out = _conform(trace)
    assert code == 0, out
    decide(project, "Bash", {"command": "ls"}, tool_use_id="toolu_L")  # allowed, never answered
    _event(project, "Stop", stop_hook_active=False, last_assistant_message="ok")
    code, out = _conform(trace)
    assert code == 1 and "toolu_L" in out


def test_a_trace_that_cannot_be_written_leaves_the_decision_standing(project: Path) -> None:
    (project / ".metis").mkdir()
    (project / ".metis" / "claude-code").write_text("a file where the trace folder goes")
    code, out, err = run(json.dumps(payload(project, "Bash", {"command": "rm -rf build"})))
    assert code == 0 and "not recorded" in err and err.count("\n") == 1, err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    body = {k: v for k, v in payload(project, "Bash", {}).items() if k != "tool_input"}
    body.update(hook_event_name="Stop", stop_hook_active=False)
    code, out, err = run(json.dumps(body))
    assert (code, out) == (0, "") and "not recorded" in err


def test_an_internal_error_denies_an_effect_and_leaves_a_read_alone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the decision itself raises (a bug in metis)."""
    import metis_cli._call_decision as call_decision

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(call_decision, "decide_call", broken)
    code, out, err = run(json.dumps(payload(project, "Bash", {"command": "ls"})))
    assert code == 0 and "internal error (RuntimeError: boom)" in err
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("metis: deny: metis cannot decide this call (internal error")
    code, out, err = run(json.dumps(payload(project, "Read", {"file_path": str(project / "a")})))
    assert (code, out) == (0, "") and "boom" in err
