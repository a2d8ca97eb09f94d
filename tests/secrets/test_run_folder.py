"""A real `metis run` (the shipped coordinator scenario: real child processes
in branch worktrees) with credentials in its task, its workspace and its
environment: none reaches any file of the run or its output, every file of the
run's folder is 0600 and every folder 0700 (whatever the umask), and the
tools' environment has no secret-named variable unless `--pass-env`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ENV_SECRET = "s3rv1ce-t0ken-0123456789abcdef"
TASK_KEY = "AKIAIOSFODNN7EXAMPLE"
TASK_PASSWORD = "hunter2-but-longer-9"


def _metis(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from metis_cli import main; sys.argv[0] = 'metis'; main()",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_a_run_writes_no_credential_and_only_private_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["ACME_SERVICE_TOKEN"] = ENV_SECRET
    task = f"Coordinate: deploy with key {TASK_KEY} and DB_PASSWORD={TASK_PASSWORD} please"
    script = (
        "import os, sys; os.umask(0o022); from metis_cli import main; sys.argv[0] = 'metis'; main()"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "run",
            task,
            "--scenario",
            "coordinator",
            "--workspace",
            str(ws),
            "--headless",
            "--mode",
            "acceptEdits",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    metis = ws / ".metis"
    files = [p for p in metis.rglob("*") if "worktrees" not in p.relative_to(metis).parts]
    assert any(p.name == "config.json" for p in files) and any(
        p.name == "result.json" for p in files
    )
    for path in [metis, *files]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        else:
            assert mode == 0o600, (path, oct(mode))
            data = path.read_bytes()
            for secret in (ENV_SECRET, TASK_KEY, TASK_PASSWORD):
                assert secret.encode() not in data, (path, secret)
    for stream in (done.stdout, done.stderr):
        for secret in (ENV_SECRET, TASK_KEY, TASK_PASSWORD):
            assert secret not in stream


def test_tools_see_no_secret_named_variable_unless_passed(tmp_path: Path) -> None:
    from tests.runtime.test_loop_support import write_scenario

    turns = [
        [{"tool": "bash", "id": "t1", "input": {"command": "env > env.txt"}}],
        [{"text": "ok"}],
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(
        DB_PASSWORD="pw-0123456789",
        DATABASE_URL="postgres://u:pw-0123456789@h/db",
        MY_API_KEY="key-0123456789",
        GITHUB_TOKEN="ghp_" + "a" * 36,
        PLAIN_VALUE="kept",
    )
    for passed in ((), ("MY_API_KEY",)):
        ws = tmp_path / f"ws{len(passed)}"
        scenario = write_scenario(tmp_path / "s.yaml", turns)
        args = [
            "run",
            "--scenario",
            str(scenario),
            "--workspace",
            str(ws),
            "--headless",
            "--mode",
            "bypassPermissions",
            "-q",
        ]
        for name in passed:
            args += ["--pass-env", name]
        done = _metis(*args, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        names = {
            line.split("=", 1)[0]
            for line in (ws / "env.txt").read_text().splitlines()
            if "=" in line
        }
        assert "PLAIN_VALUE" in names and "PATH" in names
        assert not {"DB_PASSWORD", "DATABASE_URL", "GITHUB_TOKEN"} & names
        assert ("MY_API_KEY" in names) == bool(passed)
