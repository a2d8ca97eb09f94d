"""The shepherd: one small process per agent tree that outlives its runtime
just long enough to kill whatever the tree left behind (specs/secrets.md,
"Processes").

Run by file path (`python -I -S _shepherd.py TOKEN CGROUP`, stdlib only, so
it starts in milliseconds) with its stdin the read end of a pipe whose only
write end the tree's root runtime holds. It leaves the runtime's session and
ignores the usual signals, then blocks on that pipe. End of file means the
runtime is gone, however it died (an exit, SIGTERM, SIGKILL: the kernel
closes the pipe in every case). What the runtime writes into the pipe are
`spare SID` lines: sessions of background jobs detached on purpose
(`metis run --detach-jobs`), whose processes the scan leaves alone (the
runtime moved them out of the cgroup). Then it kills:
- the run's cgroup whole (`cgroup.kill`), where one was made: no process
  can leave a cgroup by forking or `setsid`;
- every process whose environment holds `METIS_TREE=TOKEN`, scanned in
  /proc until none is left (every process of the tree inherits it, through
  `setsid`, `nohup`, double forks and background jobs alike);
then removes the cgroup and exits.

A parent-death signal is not inherited across fork, and a subreaper that is
SIGKILLed cannot clean up: hence this process, notified by the kernel itself.
"""

from __future__ import annotations

import os
import signal
import sys
import time

TREE_ENV = "METIS_TREE"
SCAN_ROUNDS_S = 3.0


def _holds_token(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return marker in fh.read().split(b"\0")
    except OSError:
        return False


def _session(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[3])
    except (OSError, IndexError, ValueError):
        return None


def kill_tree(
    token: str, cgroup: str, exclude: tuple[int, ...] = (), spared: frozenset[int] = frozenset()
) -> int:
    """Kill the cgroup (if any) and every process holding the token but those
    of the `spared` sessions (background jobs detached on purpose); return
    how many processes were signalled by the scan."""
    if cgroup:
        try:
            with open(os.path.join(cgroup, "cgroup.kill"), "w") as fh:
                fh.write("1")
        except OSError:
            pass
    marker = f"{TREE_ENV}={token}".encode()
    me = {os.getpid(), *exclude}
    killed = 0
    deadline = time.monotonic() + SCAN_ROUNDS_S
    quiet = 0  # scans in a row that found nothing
    while True:
        found = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in me:
                continue
            pid = int(entry)
            if _holds_token(pid, marker) and not (spared and _session(pid) in spared):
                found += 1
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
        # Two quiet scans, not one: a process in the middle of an exec shows
        # an empty environ for a moment (its memory is being replaced), and a
        # fork may be under way; the second scan, 20 ms on, sees them.
        quiet = 0 if found else quiet + 1
        if quiet >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if cgroup:
        for _ in range(50):
            try:
                os.rmdir(cgroup)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)  # its last processes are still exiting
    return killed


def main(argv: list[str]) -> int:
    token, cgroup = argv[1], argv[2] if len(argv) > 2 else ""
    os.setsid()  # out of the runtime's session and process group
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    pending = b""
    spared: set[int] = set()
    while True:
        try:
            data = os.read(0, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        # `spare SID` lines: a session the runtime detached on purpose.
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            word, _, sid = line.partition(b" ")
            if word == b"spare" and sid.isdigit():
                spared.add(int(sid))
    kill_tree(token, cgroup, spared=frozenset(spared))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
