"""The real Claude Code CLI (its npm package, `@anthropic-ai/claude-code`) with
metis as its SessionStart/PreToolUse/PostToolUse/Stop/SessionEnd hook (issue 26),
installed as the README tells users to.

Claude Code runs in print mode (`-p --output-format stream-json --verbose`)
against a local fake of the Anthropic Messages API (`_fake_anthropic`) that
scripts its tool calls; its configuration and home are in a temporary folder,
telemetry and updates off. Claude Code's own rules allow `rm` and `touch`;
metis's `.metis/settings.json` (which Claude Code does not read) denies `rm`.
Checked: the denied call's effect does not happen, an allowed call runs, a
corrupt hook state stops neither a call nor the end of a session (the Stop
hook exiting 2 would make Claude Code go on with the turn: another request),
and both Claude Code's own transcript and metis's hook trace conform.

The package comes from `make setup` (`.venv/claude-code/`), or this test
installs it there with npm; it skips, saying why, only when it cannot.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._hook_client import socket_paths
from metis_cli._main import cli

from ._fake_anthropic import FakeAnthropic
from ._fake_anthropic import text_turn
from ._fake_anthropic import tool_turn

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".venv" / "claude-code"
CLAUDE = PREFIX / "node_modules" / ".bin" / "claude"


def _claude() -> Path:
    named = os.environ.get("METIS_CLAUDE_CODE")
    if named:
        return Path(named)
    if CLAUDE.exists():
        return CLAUDE
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed, so the Claude Code CLI cannot be installed")
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".install.lock", "w") as lock:  # one install for all test workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not CLAUDE.exists():
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--fetch-retries=1",
                 "--prefix", str(PREFIX), "@anthropic-ai/claude-code"],
                capture_output=True, text=True, timeout=240, check=False,
            )  # fmt: skip
            if done.returncode != 0 or not CLAUDE.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                pytest.skip(f"npm could not install @anthropic-ai/claude-code: {tail[0]}")
    return CLAUDE


def _hooks() -> dict[str, Any]:
    command = {"type": "command", "command": f"{sys.executable} -m metis_cli hook claude-code",
               "timeout": 60}  # fmt: skip
    every = [{"matcher": "*", "hooks": [command]}]
    return {
        "PreToolUse": every,
        "PostToolUse": every,
        "PostToolUseFailure": every,
        "Stop": [{"hooks": [command]}],
        "SessionEnd": [{"hooks": [command]}],
        "SessionStart": [{"hooks": [command]}],
    }  # every event, as the README installs it


@pytest.fixture
def session(tmp_path: Path) -> dict[str, Any]:
    claude = _claude()
    project = Path(os.path.realpath(tmp_path)) / "proj"
    config = project.parent / "config"
    (project / ".claude").mkdir(parents=True)
    (project / ".metis").mkdir()
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("object")
    config.mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps(
            {"permissions": {"allow": ["Bash(rm:*)", "Bash(touch:*)", "Read"]}, "hooks": _hooks()}
        )
    )
    (project / ".metis" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm *)"]}})
    )
    # Claude Code ignores a project's allow rules until its trust dialog is
    # accepted; print mode has no dialog, so the config says it was.
    (config / ".claude.json").write_text(json.dumps(
        {"projects": {str(project): {"hasTrustDialogAccepted": True}}}))  # fmt: skip
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(config), "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_API_KEY": "test", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "METIS_MANAGED_SETTINGS_DIRS": str(project.parent / "managed"),
        "METIS_HOOK_HELPER": "1",  # the session's helper process, as users get it
    }  # fmt: skip
    if "PYTHONPATH" in os.environ:  # the metis under test, where it is not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return {"claude": claude, "project": project, "config": config, "env": env}


def _run(s: dict[str, Any], script: list[Any], sid: str) -> tuple[list[dict[str, Any]], Any]:
    with FakeAnthropic(script) as fake:
        env = {**s["env"], "ANTHROPIC_BASE_URL": fake.url}
        done = subprocess.run(
            [str(s["claude"]), "-p", "Tidy the project", "--output-format", "stream-json",
             "--verbose", "--session-id", sid, "--max-turns", "10"],
            cwd=s["project"], env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return events, fake


def _main_requests(fake: FakeAnthropic) -> int:
    return sum(1 for path, body in fake.requests if "/v1/messages" in path and body.get("tools"))


def _conform(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["conform", "--format", "claude-code", str(path)])
    return result.exit_code, result.output


def _corrupt_state(project: Path, sid: str) -> Path:
    state = project / ".metis" / "claude-code" / f"{sid}.jsonl.state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text('{"threads": ')
    return state


def test_real_claude_code_obeys_metis_and_is_never_wedged(
    session: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    project: Path = session["project"]
    sid = str(uuid.uuid4())
    state = _corrupt_state(project, sid)  # the first PreToolUse finds it so
    script = [
        tool_turn(("toolu_rm", "Bash", {"command": "rm -rf build", "description": "clean"})),
        tool_turn(("toolu_touch", "Bash", {"command": "touch made.txt", "description": "mark"})),
        tool_turn(("toolu_read", "Read", {"file_path": str(project / "made.txt")})),
        text_turn("Done."),
    ]
    events, fake = _run(session, script, sid)
    results = {b["tool_use_id"]: b for e in events if e.get("type") == "user"
               for b in e["message"]["content"] if b.get("type") == "tool_result"}  # fmt: skip
    assert (project / "build" / "out.o").exists()  # metis denied it: the effect did not happen
    assert results["toolu_rm"]["is_error"] and "metis: deny" in str(results["toolu_rm"]["content"])
    assert (project / "made.txt").exists() and not results["toolu_touch"].get("is_error")
    assert not results["toolu_read"].get("is_error")
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "success"
    assert list(state.parent.glob(f"{sid}.jsonl.state.json.corrupt-*"))  # set aside
    assert _main_requests(fake) == 4  # the script, nothing more: the turn ended at Stop

    found = list(session["config"].glob(f"projects/*/{sid}.jsonl"))
    assert found, sorted(str(p) for p in session["config"].rglob("*.jsonl"))
    code, out = _conform(found[0])
    assert code == 0, out
    code, out = _conform(project / ".metis" / "claude-code" / f"{sid}.jsonl")
    assert code == 0, out
    # The session's helper answered the later calls, and ended with the session.
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # as in Claude Code's environment
    paths = socket_paths(sid)
    assert paths is not None and Path(paths[1]).exists()  # the helper's lock: it ran
    deadline = time.monotonic() + 15
    while Path(paths[0]).exists():
        assert time.monotonic() < deadline, "the helper outlived the session"
        time.sleep(0.1)


def test_a_corrupt_state_does_not_stop_the_session_from_ending(session: dict[str, Any]) -> None:
    """No tool call: the Stop hook is the first to read the corrupt state. A
    Stop hook that exits 2 makes Claude Code continue the turn (another
    request to the API); metis sets the state aside and lets it end."""
    project: Path = session["project"]
    sid = str(uuid.uuid4())
    state = _corrupt_state(project, sid)
    events, fake = _run(session, [text_turn("Nothing to do.")], sid)
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "success"
    assert _main_requests(fake) == 1
    assert list(state.parent.glob(f"{sid}.jsonl.state.json.corrupt-*"))
