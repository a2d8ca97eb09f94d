"""The hook's fast path: `metis-hook` (and `metis hook claude-code`) hand the
payload to the session's helper process and print its answer.

Claude Code starts the hook afresh for every tool call, and a fresh Python
that imports the gate (pydantic's trace models, the shell parser, the
redactor) spends about 0.25 s of CPU before deciding anything. So the first
call of a session answers in this process and starts a helper
(`_hook_helper`) for the session: it has those modules loaded and answers the
later calls over a Unix socket in a private folder, the same `answer` as
here. This module imports only the standard library.

Installed as the SessionStart hook too, the helper starts with the session
and loads while the user types: then no tool call pays for the load. A call
that finds a helper still loading (it holds the session's lock) waits for
it, up to 10 s, rather than loading everything a second time.

The helper's lifetime is the session's: it ends at the SessionEnd hook, when
the Claude Code process (the first ancestor of the hook that is not a shell)
is gone, or after 30 idle minutes. Anything wrong with it (none yet, refused,
no answer within the time limit) makes the call answer here instead.
`METIS_HOOK_HELPER=0` turns the helper off. `metis hook claude-code` reaches `main` here
before click loads (`metis_cli/__init__.py`).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Sequence

__all__ = ["main", "run", "socket_paths"]

_ENV = "METIS_HOOK_HELPER"
_REPLY_TIMEOUT_S = 20.0
_START_WAIT_S = 10.0  # a call waits this long for a helper that is still loading
_START = "SessionStart"  # starts the helper, so that no tool call pays for the load
_BASE_MAX = 60  # + "/metis-hook-<uid>/<24 hex>.sock" stays under 108 bytes
# Shells and the wrappers a hook command may be run under: not the session.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "fish", "env", "timeout", "nice",
                     "nohup", "stdbuf", "time"})  # fmt: skip
_USAGE = "usage: metis hook claude-code [--trace PATH] [--pass-allow] [--no-trace]"


def parse_args(argv: Sequence[str]) -> tuple[str | None, bool, bool]:
    """(--trace, --pass-allow, --no-trace); ValueError names the bad word."""
    trace, pass_allow, no_trace = None, False, False
    words = list(argv)
    while words:
        word = words.pop(0)
        if word == "--pass-allow":
            pass_allow = True
        elif word == "--no-trace":
            no_trace = True
        elif word == "--trace" and words:
            trace = words.pop(0)
        elif word.startswith("--trace="):
            trace = word.partition("=")[2]
        else:
            raise ValueError(word)
    return trace, pass_allow, no_trace


def socket_paths(session: str) -> tuple[str, str] | None:
    """(socket, lock) of a session's helper, in a folder only this user can
    use (None: no such folder can be had)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    if len(base) > _BASE_MAX:  # a Unix socket's path has at most 107 bytes
        base = "/tmp"
    folder = os.path.join(base, f"metis-hook-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's, or open to others: no helper
    here = os.path.dirname(os.path.abspath(__file__))
    key = hashlib.sha256(f"{session}\0{sys.executable}\0{here}".encode()).hexdigest()[:24]
    return os.path.join(folder, key + ".sock"), os.path.join(folder, key + ".lock")


def _session_of(data: bytes) -> tuple[str, str] | None:
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    session, event = payload.get("session_id"), payload.get("hook_event_name")
    if not isinstance(session, str) or not session or not isinstance(event, str):
        return None
    return session, event


def _ask(path: str, request: bytes) -> dict[str, object] | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(_REPLY_TIMEOUT_S)
            sock.connect(path)
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    ok = isinstance(reply, dict) and isinstance(reply.get("code"), int)
    return reply if ok else None


def _starting(lock: str) -> bool:
    """Whether a helper holds the session's lock (up, or still loading)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops a lock it got
    return False


def _ask_when_up(paths: tuple[str, str], request: bytes) -> dict[str, object] | None:
    """The starting helper's answer, once it listens; None if it stops holding
    its lock first or is not up within `_START_WAIT_S`."""
    deadline = time.monotonic() + _START_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if os.path.exists(paths[0]):
            reply = _ask(paths[0], request)
            if reply is not None:
                return reply
        if not _starting(paths[1]):
            return None
    return None


def _session_process() -> str:
    """The Claude Code process, the first ancestor that is not a shell, as
    `pid:start time` (the start time tells a reused pid apart); "0": unknown."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                raw = fh.read().decode("utf-8", "replace")
        except OSError:
            return "0"
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        if comm not in _SHELLS:
            return f"{pid}:{fields[19]}"
        pid = int(fields[1])
        if pid <= 1:
            return "0"
    return "0"


def _start_helper(paths: tuple[str, str]) -> None:
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "metis_cli._hook_helper", *paths, _session_process()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # never Claude Code's pipe: it waits for it to close
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


def run(data: bytes, argv: Sequence[str]) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) for one payload; by the helper when it can."""
    seen = _session_of(data)
    helper = os.environ.get(_ENV, "1") != "0" and seen is not None
    paths = socket_paths(seen[0]) if helper and seen is not None else None
    if paths is not None:
        request = json.dumps({
            "argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ),
            "stdin": base64.b64encode(data).decode("ascii"),
        }).encode()  # fmt: skip
        reply = _ask(paths[0], request)
        if reply is None and seen is not None and seen[1] == _START:
            _start_helper(paths)  # it loads the gate while the session starts
            return "", "", 0
        if reply is None and _starting(paths[1]):
            reply = _ask_when_up(paths, request)  # one load, not a second one here
        if reply is not None:
            return str(reply.get("stdout", "")), str(reply.get("stderr", "")), int(reply["code"])  # type: ignore[call-overload]
    from ._hook_events import HookOptions
    from ._hook_events import answer

    trace, pass_allow, no_trace = parse_args(argv)
    result = answer(data, HookOptions(trace=trace, pass_allow=pass_allow, record=not no_trace))
    if paths is not None and seen is not None and seen[1] != "SessionEnd":
        _start_helper(paths)
    return result.stdout(), result.stderr(), result.code


def main(argv: Sequence[str] | None = None) -> None:
    """`metis-hook [--trace PATH] [--pass-allow] [--no-trace]`: one payload on stdin."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        print(_USAGE)
        raise SystemExit(0)
    try:
        parse_args(args)
    except ValueError as exc:
        sys.stderr.write(f"{_USAGE}\nmetis hook claude-code: no such option: {exc}\n")
        raise SystemExit(2) from None
    data = sys.stdin.buffer.read() if sys.stdin is not None else b""
    out, err, code = run(data, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.stdout.flush()
    raise SystemExit(code)


if __name__ == "__main__":
    main()
