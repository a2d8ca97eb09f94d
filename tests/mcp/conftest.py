"""Real MCP servers for the tests: `servers/fixture_server.py` over stdio
(one host per module where the tests only call) and over Streamable HTTP
on 127.0.0.1 (a free port; the test kills the process).

Nothing here waits without a bound: every test runs with short MCP
timeouts (startup and call, `MCP_TIMEOUT` / `MCP_TOOL_TIMEOUT`, inherited by
the `metis` processes the tests start), and every server process a test
starts is killed in a `finally` (stdio servers also die with the test
process: PR_SET_PDEATHSIG)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.mcp import ServerConfig
from metis_runtime.mcp import parse_server
from tests._procs import live_processes

SERVER = Path(__file__).parent / "servers" / "fixture_server.py"


def stdio_entry(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER)], "env": dict(env)}


def stdio_server(name: str = "fixture", **env: str) -> ServerConfig:
    return parse_server(name, stdio_entry(**env), "test")


# Bounds for every test: a server that never answers fails the test in seconds,
# and no MCP test runs longer than MCP_TEST_TIMEOUT_S (pytest-timeout; the
# suite's own bound, pyproject's `timeout`, is 300 s).
MCP_TEST_TIMEOUT_S = 120


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(MCP_TEST_TIMEOUT_S))


TEST_STARTUP_MS = "30000"
TEST_TOOL_MS = "30000"


@pytest.fixture(autouse=True)
def _bounded_mcp_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TIMEOUT", TEST_STARTUP_MS)
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", TEST_TOOL_MS)


def _live_children() -> set[int]:
    """This process's children that are still running (not zombies)."""
    me = os.getpid()
    return {pid for pid, fields in live_processes() if int(fields[1]) == me}


@pytest.fixture(autouse=True)
def _no_server_left_running() -> Iterator[None]:
    """Every process a test starts (servers, `metis run`) has ended when it ends."""
    before = _live_children()
    yield
    deadline = time.monotonic() + 5.0
    left = _live_children() - before
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _live_children() - before
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left running by the test: {sorted(left)}"


def base_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the HTTP fixture server exited: {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the HTTP fixture server did not listen")


def start_http(
    log: Path | None = None, port: int | None = None, cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """The fixture server over Streamable HTTP on 127.0.0.1 (`port`, else a
    free one; in `cwd`), listening; the caller kills it."""
    port = free_port() if port is None else port
    env = {**os.environ, **({"MCP_FIXTURE_LOG": str(log)} if log else {})}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_listening(port, proc)
    except BaseException:
        stop(proc)
        raise
    return proc, port


def stop(proc: subprocess.Popen[Any]) -> None:
    """Kill a server process the test started (its whole session) and reap it."""
    if proc.returncode is None:  # not reaped yet: the pid is still its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    proc.wait(timeout=10)
