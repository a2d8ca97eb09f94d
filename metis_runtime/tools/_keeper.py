"""The keeper: how a background job can be detached on purpose (specs/secrets.md,
"Processes"; `metis run --detach-jobs`).

Run by file path (`python -I -S _keeper.py PROGRAM ARG...`, stdlib only, so it
starts in milliseconds) as the job's process, in the job's own session, with
the runtime's parent-death signal and SIGUSR1 blocked (both set before exec by
the bash tool). It runs the job as a chain of three processes:

    keeper  (the runtime's child: parent-death signal from the runtime)
      holder  (parent-death signal from the keeper; relays the job's output)
        job     (PROGRAM: parent-death signal from the holder)

Until it is detached the chain dies with the runtime, as every job does (and
the tree's guard finds what the job starts), and the keeper exits as the job
did, so the job's exit status and output are the tool's result.

SIGUSR1 to the keeper detaches: the holder clears its parent-death signal,
sends its output to /dev/null from then on (closing the runtime's pipe: the
runtime's sign that it happened) and tells the keeper, which exits 0. The
holder (now the runtime's orphan) keeps the job alive and relays its output
nowhere until the job ends; the runtime exits without killing the session.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys

PR_SET_PDEATHSIG = 1
ACK_WAIT_S = 5.0
_libc = ctypes.CDLL(None, use_errno=True)


class _Detach(Exception):
    pass


def _pdeathsig(sig: int) -> None:
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def _status_exit(status: int) -> int:
    """Exit as the waited-for process did (its signal, re-raised, or its code)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _devnull_output() -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _job(argv: list[str], out_w: int, holder: int) -> None:
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.close(out_w)
    _pdeathsig(signal.SIGKILL)
    if os.getppid() != holder:  # the holder died before we could ask
        os._exit(137)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # Python ignored it; the job must not
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    try:
        os.execv(argv[0], argv)
    except OSError:
        os._exit(127)


def _holder(argv: list[str], ack_w: int, keeper: int) -> int:
    _pdeathsig(signal.SIGKILL)
    if os.getppid() != keeper:
        return 137
    out_r, out_w = os.pipe()
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(ack_w)
        _job(argv, out_w, me)
    os.close(out_w)

    def detach(signum: int, frame: object) -> None:
        _pdeathsig(0)
        _devnull_output()  # the runtime's pipe closes: its sign
        os.write(ack_w, b"1")

    signal.signal(signal.SIGUSR1, detach)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    while True:
        data = os.read(out_r, 65536)
        if not data:
            break
        try:
            os.write(1, data)
        except OSError:  # the runtime is gone: keep the job going, its output nowhere
            _devnull_output()
    _, status = os.waitpid(pid, 0)
    return _status_exit(status)


def main(argv: list[str]) -> int:
    ack_r, ack_w = os.pipe()
    me = os.getpid()
    holder = os.fork()
    if holder == 0:
        os.close(ack_r)
        os._exit(_holder(argv, ack_w, me))
    os.close(ack_w)
    _devnull_output()  # only the holder writes to the runtime's pipe

    def detach(signum: int, frame: object) -> None:
        raise _Detach

    signal.signal(signal.SIGUSR1, detach)
    while True:
        try:
            # Unblocked inside the `try`: a detach that came early raises here.
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
            _, status = os.waitpid(holder, 0)
            return _status_exit(status)
        except _Detach:
            os.kill(holder, signal.SIGUSR1)
            ready, _, _ = select.select([ack_r], [], [], ACK_WAIT_S)
            if ready and os.read(ack_r, 1):
                return 0  # the holder keeps the job: it is detached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
