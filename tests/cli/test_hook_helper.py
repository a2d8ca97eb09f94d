"""The hook's session helper (`_hook_helper`, started by `_hook_client`): it
answers as the hook process would, and its life is the session's (issue 26)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from metis_cli._hook_client import socket_paths

from .test_hook import payload
from .test_hook import project  # noqa: F401  (the fixture)

CLIENT = [sys.executable, "-m", "metis_cli._hook_client"]


def _wait(predicate: object, what: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def helper_env(
    project: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> dict[str, str]:
    run = Path(tempfile.mkdtemp(prefix="mh-", dir="/tmp"))  # short: a socket path's limit
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    request.addfinalizer(lambda: shutil.rmtree(run, ignore_errors=True))
    return {**os.environ, "METIS_HOOK_HELPER": "1"}


def _session_paths() -> tuple[str, str]:
    """(socket, lock) of the helper of the payloads' session."""
    paths = socket_paths("abc123")
    assert paths is not None
    return paths


def _call(body: dict[str, object], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLIENT, input=json.dumps(body), capture_output=True, text=True,
                          env=env, timeout=60, check=False)  # fmt: skip


def test_the_helper_answers_as_the_hook_process_does_and_ends_with_the_session(
    project: Path,  # noqa: F811
    helper_env: dict[str, str],
) -> None:
    paths = _session_paths()
    sock = Path(paths[0])
    calls = [("Bash", {"command": "rm -rf build"}), ("Bash", {"command": "npm test"}),
             ("Bash", {"command": "git push origin main"})]  # fmt: skip
    alone = [_call(payload(project, t, i), {**helper_env, "METIS_HOOK_HELPER": "0"})
             for t, i in calls]  # fmt: skip
    first = _call(payload(project, *calls[0]), helper_env)  # answered here; starts the helper
    _wait(sock.exists, "the helper did not start")
    served = [_call(payload(project, t, i), helper_env) for t, i in calls]
    assert [(d.stdout, d.returncode) for d in served] == [(d.stdout, d.returncode) for d in alone]
    assert first.stdout == alone[0].stdout
    assert json.loads(served[0].stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    end = payload(project, "Bash", {"command": "x"}, hook_event_name="SessionEnd")
    assert _call(end, helper_env).returncode == 0
    _wait(lambda: not sock.exists(), "the helper did not end at SessionEnd")


def test_the_helper_ends_when_the_session_process_is_gone(
    project: Path,  # noqa: F811
    helper_env: dict[str, str],
) -> None:
    """The session process is the hook's first ancestor that is not a shell:
    here a Python process that runs one hook call, then exits."""
    paths = _session_paths()
    sock = Path(paths[0])
    body = json.dumps(payload(project, "Bash", {"command": "ls"}))
    parent = (
        "import subprocess, sys, time; "
        f"subprocess.run({CLIENT!r}, input={body!r}, text=True, capture_output=True); "
        "time.sleep(float(sys.argv[1]))"
    )
    session = subprocess.Popen([sys.executable, "-c", parent, "60"], env=helper_env)
    try:
        _wait(sock.exists, "the helper did not start")
    finally:
        session.kill()
        session.wait()
    _wait(lambda: not sock.exists(), "the helper outlived its session", limit=15)


def test_no_helper_in_a_folder_others_can_use(
    project: Path,  # noqa: F811
    helper_env: dict[str, str],
) -> None:
    folder = Path(os.environ["XDG_RUNTIME_DIR"]) / f"metis-hook-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    assert socket_paths("abc123") is None
    done = _call(payload(project, "Bash", {"command": "rm -rf build"}), helper_env)
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert list(folder.iterdir()) == []


def test_the_client_loads_only_the_standard_library() -> None:
    """What a call answered by the helper loads: no click, pydantic, runtime or model."""
    probe = "import sys, metis_cli._hook_client; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    modules = set(done.stdout.split())
    ours = sorted(m for m in modules if m.startswith("metis"))
    assert ours == ["metis_cli", "metis_cli._hook_client"]
    for heavy in ("click", "pydantic", "attrs", "tree_sitter", "yaml"):
        assert heavy not in modules


def test_old_locks_of_ended_helpers_are_swept(
    project: Path,  # noqa: F811
    helper_env: dict[str, str],
) -> None:
    paths = _session_paths()
    folder = Path(paths[0]).parent
    old, fresh = folder / ("0" * 24 + ".lock"), folder / ("1" * 24 + ".lock")
    for lock in (old, fresh):
        lock.touch()
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    _call(payload(project, "Bash", {"command": "ls"}), helper_env)
    _wait(Path(paths[0]).exists, "the helper did not start")
    assert not old.exists() and fresh.exists() and Path(paths[1]).exists()
    _call(payload(project, "Bash", {"command": "x"}, hook_event_name="SessionEnd"), helper_env)
    _wait(lambda: not Path(paths[0]).exists(), "the helper did not end")


def _cpu_of(body: dict[str, object], env: dict[str, str]) -> tuple[float, str]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = _call(body, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def test_session_start_starts_the_helper_and_no_call_loads_the_gate_again(
    project: Path,  # noqa: F811
    helper_env: dict[str, str],
) -> None:
    """SessionStart only starts the helper (nothing on stdout: Claude Code
    would add it to the context); a call made while it loads waits for it
    instead of loading everything itself, so it costs what a served call does."""
    from metis_cli._hook_client import _starting

    paths = _session_paths()
    call = payload(project, "Bash", {"command": "rm -rf build"})
    alone_cpu, alone = _cpu_of(call, {**helper_env, "METIS_HOOK_HELPER": "0"})
    start = payload(project, "Bash", {"command": "x"}, hook_event_name="SessionStart")
    start_cpu, out = _cpu_of(start, helper_env)
    assert out == ""
    _wait(lambda: _starting(paths[1]), "SessionStart did not start the helper")
    first_cpu, first = _cpu_of(call, helper_env)  # the helper may still be loading
    assert (
        first == alone and json.loads(first)["hookSpecificOutput"]["permissionDecision"] == "deny"
    )
    assert Path(paths[0]).exists()
    assert start_cpu < alone_cpu / 2 and first_cpu < alone_cpu / 2, (
        start_cpu,
        first_cpu,
        alone_cpu,
    )
    _call(payload(project, "Bash", {"command": "x"}, hook_event_name="SessionEnd"), helper_env)
    _wait(lambda: not Path(paths[0]).exists(), "the helper did not end")
    assert not _starting(paths[1])
