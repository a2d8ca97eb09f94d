"""Real MCP servers for the tests: `servers/fixture_server.py` over stdio
(one host per module where the tests only call) and over Streamable HTTP
on 127.0.0.1 (a free port, the process stopped after the module)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.mcp import ServerConfig, parse_server

SERVER = Path(__file__).parent / "servers" / "fixture_server.py"


def stdio_entry(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER)], "env": dict(env)}


def stdio_server(name: str = "fixture", **env: str) -> ServerConfig:
    return parse_server(name, stdio_entry(**env), "test")


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


def start_http(log: Path | None = None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, **({"MCP_FIXTURE_LOG": str(log)} if log else {})}
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_listening(port, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, port


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    log = tmp_path_factory.mktemp("http") / "log.txt"
    proc, port = start_http(log)
    try:
        yield port, log
    finally:
        proc.kill()
        proc.wait()
