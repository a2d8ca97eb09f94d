"""Process execution and exits, seen through strace (`strace -f -e trace=execve,execveat`).

The witnessed command runs under `strace -D --seccomp-bpf`: the tracer is a
detached grandchild and the command keeps the pid the witness started (so
the witness waits for it and kills it if the witness dies), and seccomp-bpf
stops the command only at the traced calls, not at every system call.
strace writes to a file in a private folder; the witness reads it as it
grows. `probe()` finds out at run time whether strace is installed and
whether ptrace is allowed here (containers often forbid it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

# The signals whose deliveries are recorded (TRACE-4): those that stop a run
# (`metis run`'s SIGINT, a child's SIGTERM from its parent, a hangup, a quit).
# Not SIGCHLD and the like: every child's exit would print one.
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
STRACE_ARGS = (
    "-D",
    "--seccomp-bpf",
    "-f",
    # One -q, not two: `-qq` would also drop the exit lines (`+++ exited with
    # N +++`, `+++ killed by SIG... +++`), which the witness records (TRACE-3).
    "-q",
    "-e",
    "trace=execve,execveat",
    "-e",
    "signal=" + ",".join(SIGNALS),
    "-s",
    "65535",
    "-ttt",
)
HOW = "strace -f -e trace=execve,execveat (--seccomp-bpf)"
HOW_EXITS = "strace -f: each traced process's `+++ exited with N +++` / `+++ killed by SIG +++`"
HOW_SIGNALS = "strace -f -e signal=...: each delivery `--- SIG... {si_code=..., si_pid=...} ---`"


def probe() -> tuple[str | None, str]:
    """(strace's path, "") when it can trace here, else (None, why not)."""
    strace = shutil.which("strace")
    if strace is None:
        return None, "strace is not installed"
    try:
        done = subprocess.run(
            [strace, *STRACE_ARGS, "-o", os.devnull, "--", "/bin/true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"strace could not run: {exc}"
    if done.returncode != 0:
        reason = " ".join(done.stderr.split())[:200] or f"exit status {done.returncode}"
        return None, f"ptrace is not permitted here ({reason})"
    return strace, ""


def realtime_offset() -> float:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC, read back to back (the closest of
    five tries): strace stamps in real time, the witness in monotonic time."""
    best: tuple[float, float] | None = None
    for _ in range(5):
        m1 = time.monotonic()
        r = time.time()
        m2 = time.monotonic()
        if best is None or m2 - m1 < best[0]:
            best = (m2 - m1, r - (m1 + m2) / 2)
    assert best is not None
    return best[1]


# 1234  1700000000.123456 execve("/bin/sh", ["sh", "-c", "x"], 0x7ff... /* 9 vars */) = 0
_LINE = re.compile(r"^(\d+) +(\d+\.\d+) (.*)$")
_CALL = re.compile(r"^(execve|execveat)\((.*)$")
_RESUMED = re.compile(r"^<\.\.\. (execve|execveat) resumed>(.*)$")
_RESULT = re.compile(r"\) += (-?\d+)(?: [A-Z]+.*)?$")
# 1234  1700000000.123456 +++ exited with 1 +++ | +++ killed by SIGKILL (core dumped) +++
# (strace's src/strace.c, print_exited / print_signalled)
_EXITED = re.compile(r"^\+\+\+ exited with (\d+) \+\+\+$")
_KILLED = re.compile(r"^\+\+\+ killed by (SIG[A-Z0-9+-]+|\d+)(?: \(core dumped\))? \+\+\+$")
# 1234  1700000000.123456 --- SIGINT {si_signo=SIGINT, si_code=SI_USER, si_pid=42, si_uid=0} ---
# (strace's src/strace.c, print_stopped: the signal and its siginfo_t)
_SIGNAL = re.compile(r"^--- (SIG[A-Z0-9+-]+) \{(.*)\} ---$")
_SI_CODE = re.compile(r"\bsi_code=([A-Z_0-9-]+)")
_SI_PID = re.compile(r"\bsi_pid=(\d+)")
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "v": b"\v", "f": b"\f", "\\": b"\\", '"': b'"'}


def _string(text: str, i: int) -> tuple[str, int]:
    """The C string literal starting at `text[i]` (a quote), and the index after it."""
    assert text[i] == '"'
    out = bytearray()
    i += 1
    while i < len(text):
        c = text[i]
        if c == '"':
            return os.fsdecode(bytes(out)), i + 1
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out += _ESCAPES[nxt]
                i += 2
                continue
            if nxt == "x" and i + 3 < len(text):
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            j = i + 1
            while j < len(text) and j < i + 4 and text[j] in "01234567":
                j += 1
            if j > i + 1:
                out.append(int(text[i + 1 : j], 8) & 0xFF)
                i = j
                continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    raise ValueError("unterminated string")


def _args(text: str) -> tuple[str, list[str]]:
    """The path and argv of an execve / execveat argument list."""
    i = text.index('"')
    path, i = _string(text, i)
    argv: list[str] = []
    j = text.find("[", i)
    if j >= 0:
        i = j + 1
        while i < len(text) and text[i] != "]":
            if text[i] == '"':
                word, i = _string(text, i)
                argv.append(word)
            else:
                i += 1
    return path, argv


class ExecParser:
    """strace's lines to exec records; a call split by another process's
    (`<unfinished ...>` then `<... execve resumed>`) is joined by pid."""

    def __init__(self, offset: float, clock: Any) -> None:
        self._offset = offset
        self._clock = clock
        self._pending: dict[int, tuple[float, str]] = {}
        self._partial = ""

    def feed(self, data: str) -> Iterator[dict[str, Any]]:
        text = self._partial + data
        lines = text.split("\n")
        self._partial = lines.pop()
        hi = self._clock()
        for line in lines:
            record = self._line(line, hi)
            if record is not None:
                yield record

    def _line(self, line: str, hi: float) -> dict[str, Any] | None:
        m = _LINE.match(line)
        if m is None:
            return None
        pid, stamp, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        ended = _exit_record(pid, round(stamp - self._offset, 6), hi, rest)
        if ended is not None:
            return ended
        resumed = _RESUMED.match(rest)
        if resumed is not None:
            start = self._pending.pop(pid, None)
            if start is None:
                return None
            stamp, head = start
            rest = head + resumed.group(2)
        else:
            call = _CALL.match(rest)
            if call is None:
                return None
            if rest.endswith("<unfinished ...>"):
                self._pending[pid] = (stamp, rest[: -len("<unfinished ...>")])
                return None
        call = _CALL.match(rest)
        result = _RESULT.search(rest)
        if call is None or result is None:
            return None
        try:
            path, argv = _args(call.group(2))
        except ValueError:
            return None
        return {
            "kind": "exec",
            "pid": pid,
            "path": path,
            "argv": argv,
            "ok": result.group(1) == "0",
            "t": round(stamp - self._offset, 6),
            "hi": hi,
        }


def _exit_record(pid: int, t: float, hi: float, rest: str) -> dict[str, Any] | None:
    """A `proc_exit` (or `signal`) record from strace's exit (or signal
    delivery) line, or None for another line."""
    delivered = _SIGNAL.match(rest)
    if delivered is not None:
        info = delivered.group(2)
        code, sender = _SI_CODE.search(info), _SI_PID.search(info)
        return {
            "kind": "signal",
            "pid": pid,
            "signal": delivered.group(1),
            "code": code.group(1) if code is not None else "",
            "sender": int(sender.group(1)) if sender is not None else None,
            "t": t,
            "hi": hi,
        }
    exited = _EXITED.match(rest)
    if exited is not None:
        return {"kind": "proc_exit", "pid": pid, "status": int(exited.group(1)), "t": t, "hi": hi}
    killed = _KILLED.match(rest)
    if killed is not None:
        return {"kind": "proc_exit", "pid": pid, "signal": killed.group(1), "t": t, "hi": hi}
    return None
