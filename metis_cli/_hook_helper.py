"""The session's hook helper: `python -m metis_cli._hook_helper SOCKET LOCK PID:START`.

Started by the first hook call of a Claude Code session (`_hook_client`),
detached from Claude Code's pipes. It holds LOCK for its whole life (a second
helper for the session exits at once), loads the gate and the trace writer
once, and answers each hook call sent to SOCKET with `_hook_events.answer`,
one at a time, in the caller's environment and working folder, exactly as
the call would have been answered in its own process.

Its life is tied to the session: it ends after answering a SessionEnd
payload, when the Claude Code process (PID, started at START: a reused pid
is not it; checked each second) is gone, or after `IDLE_S` without a call. A connection from
another user is refused (SO_PEERCRED); the folder is the user's own, 0700.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import socket
import struct
import sys
import time
from typing import Any

__all__ = ["IDLE_S", "serve"]

IDLE_S = 30 * 60
_STALE_S = 24 * 3600  # a helper's lock left this long is swept
_REQUEST_MAX = 64 * 1024 * 1024
_VOLATILE = frozenset({"_", "PWD", "OLDPWD", "SHLVL"})


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()[19]


def _peer_is_me(conn: socket.socket) -> bool:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _read(conn: socket.socket) -> bytes | None:
    chunks, size = [], 0
    while chunk := conn.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > _REQUEST_MAX:
            return None
    return b"".join(chunks)


class _Environment:
    """Runs each call in its caller's environment; the redactor (built from
    the environment) and the input limits are rebuilt when it changes."""

    def __init__(self) -> None:
        self._last: dict[str, str] | None = None

    def apply(self, env: dict[str, str], cwd: str) -> None:
        from metis_runtime._input import configure_input_limits
        from metis_runtime._private import default_redactor

        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        stable = {k: v for k, v in env.items() if k not in _VOLATILE}
        if stable != self._last:
            default_redactor.cache_clear()
            with contextlib.suppress(ValueError):  # `answer` reports a bad limit itself
                configure_input_limits()
            self._last = stable


def _handle(raw: bytes, environment: _Environment) -> tuple[dict[str, Any], bool]:
    """The reply to one request, and whether the session ended."""
    from ._hook_client import parse_args
    from ._hook_events import HookOptions
    from ._hook_events import answer

    request = json.loads(raw)
    env = {str(k): str(v) for k, v in request["env"].items()}
    environment.apply(env, str(request["cwd"]))
    argv = [str(a) for a in request["argv"]]
    trace, pass_allow, no_trace = parse_args(argv)
    data = base64.b64decode(request["stdin"])
    result = answer(data, HookOptions(trace=trace, pass_allow=pass_allow, record=not no_trace))
    reply = {"stdout": result.stdout(), "stderr": result.stderr(), "code": result.code}
    try:
        ended = json.loads(data).get("hook_event_name") == "SessionEnd"
    except (ValueError, AttributeError):
        ended = False
    return reply, ended


def _sweep(folder: str, keep: str) -> None:
    """Remove the locks of helpers long gone (a day old, held by no one);
    a live helper's lock stays, so no two serve one session."""
    now = time.time()
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not name.endswith(".lock") or path == keep:
            continue
        with contextlib.suppress(OSError):
            if now - os.lstat(path).st_mtime < _STALE_S:
                continue
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.unlink(path)
            finally:
                os.close(fd)


def serve(sock_path: str, lock_path: str, session: str) -> None:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper serves this session
    _sweep(os.path.dirname(lock_path), keep=lock_path)
    pid_text, _, born = session.partition(":")
    watch = int(pid_text) if pid_text.isdigit() else 0
    if watch and _start_time(watch) != born:
        return  # the session ended before the helper started
    # Load what every answer needs before the first call comes.
    import metis_runtime._hook_session  # noqa: F401
    from metis_runtime._private import default_redactor
    from metis_runtime.permissions import Gate  # noqa: F401
    from metis_runtime.permissions import load_hierarchy  # noqa: F401
    from metis_runtime.shell import analyze_command

    from . import _call_decision  # noqa: F401
    from . import _hook_events  # noqa: F401

    analyze_command("true")
    default_redactor()
    if os.path.lexists(sock_path):
        os.unlink(sock_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    os.chmod(sock_path, 0o600)
    server.listen(16)
    environment, idle_since = _Environment(), time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([server], [], [], 1.0)
            if watch and _start_time(watch) != born:
                return  # the session's process is gone
            if not ready:
                if time.monotonic() - idle_since > IDLE_S:
                    return
                continue
            conn, _ = server.accept()
            idle_since, ended = time.monotonic(), False
            with conn:
                if not _peer_is_me(conn):
                    continue
                conn.settimeout(10.0)
                try:
                    raw = _read(conn)
                    if raw is None:
                        continue
                    reply, ended = _handle(raw, environment)
                    conn.sendall(json.dumps(reply).encode())
                except Exception:  # a bad request or a bug: the caller answers the call itself
                    continue
            if ended:
                return
    finally:
        server.close()
        if os.path.lexists(sock_path):
            os.unlink(sock_path)
        os.close(fd)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3])
