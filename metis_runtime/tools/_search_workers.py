"""The worker processes that run the grep built-in's searches.

A search is CPU work in the regex engine, which holds the GIL: run in a
thread of the runtime, it would slow the event loop and every other call of
its batch. So it runs in a worker process (`SearchWorkers`), like ripgrep
under other runtimes, and the batch's other calls and the loop go on beside
it. A worker runs this module as a script with `python -I -S`, which starts
in milliseconds; it is given the folder of the optional engines (google-re2,
pathspec) and imports nothing else outside the standard library. The pool
kills a worker that has not answered a second after `timeout_s`.

Protocol: one JSON object per line on the worker's stdin (a `SearchRequest`
as a dict), one per line on its stdout: `{"hits": [...], "truncated": b}` or
`{"error": "..."}`. A worker exits at end of input, so it dies with the
runtime; a cancelled search kills its worker.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any

if __name__ == "__main__":  # a worker: its argv names where the engines are
    sys.path[:0] = [*sys.argv[1:], os.path.dirname(os.path.abspath(__file__))]

try:
    from ._search import Cancellation
    from ._search import SearchRequest
    from ._search import SearchTimeout
    from ._search import search
    from ._search_engines import _engine_paths
except ImportError:  # a worker runs this file as a script: the modules beside it
    from _search import Cancellation  # type: ignore[import-not-found,no-redef]
    from _search import SearchRequest  # type: ignore[no-redef]
    from _search import SearchTimeout  # type: ignore[no-redef]
    from _search import search  # type: ignore[no-redef]
    from _search_engines import _engine_paths  # type: ignore[import-not-found,no-redef]


__all__ = ["SearchWorkerError", "SearchWorkers", "serve"]


class SearchWorkerError(Exception):
    """A worker died, could not start, or answered something unreadable."""


# PR_SET_PDEATHSIG fires when the *thread* that forked the worker ends, not the
# process: a worker forked from an `asyncio.to_thread` thread was killed when its
# event loop closed, and the next search met a dead worker. Every worker is
# forked from this one thread, which lives as long as the process.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="search-spawner")


class _Worker:
    def __init__(self) -> None:
        try:
            self.process = _SPAWNER.submit(self._start).result()
        except RuntimeError as exc:  # the interpreter is shutting down
            raise OSError(str(exc)) from exc

    @staticmethod
    def _start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", __file__, *_engine_paths()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            # Nothing of the runtime's environment (credentials) goes along but
            # the agent tree's mark (metis_runtime/_lifeline.py).
            env={k: v for k, v in os.environ.items() if k == "METIS_TREE"},
            close_fds=True,
            preexec_fn=_die_with_parent,
        )

    def ask(self, request: SearchRequest) -> tuple[list[str], bool]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(request).encode("ascii") + b"\n")
            stdin.flush()
            line = stdout.readline()
        except (OSError, ValueError) as exc:
            raise SearchWorkerError(f"the search worker is gone: {exc}") from exc
        if not line:
            raise SearchWorkerError("the search worker is gone")
        try:
            answer = json.loads(line)
            if answer.get("timed_out"):
                raise SearchTimeout(int(answer.get("hits_so_far", 0)))
            if "error" in answer:
                raise SearchWorkerError(str(answer["error"]))
            return [str(h) for h in answer["hits"]], bool(answer["truncated"])
        except (ValueError, KeyError, TypeError) as exc:
            raise SearchWorkerError("the search worker answered something unreadable") from exc

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait()
        except OSError:
            pass
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG(SIGKILL), as `metis_runtime._lifeline.die_with_parent`
    (this module is stdlib only: it runs as a worker script)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)


class SearchWorkers:
    """A pool of search worker processes, shared by every event loop and
    thread of the process: `run(request, cancel)` blocks (call it from a
    thread); `cancel.set()` kills the worker and `run` raises
    SearchWorkerError. Idle workers are kept, at most `keep_idle`; they end
    with the process."""

    def __init__(self, keep_idle: int = 4) -> None:
        self.keep_idle = keep_idle
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    def run(self, request: SearchRequest, cancel: Cancellation) -> tuple[list[str], bool]:
        """The worker's answer; SearchTimeout past `timeout_s` (the worker's own
        alarm, or a kill a second later if it does not answer)."""
        with self._lock:
            worker = None
            while self._idle and worker is None:
                worker = self._idle.pop()
                if worker.process.poll() is not None:  # died while idle (a killed tree)
                    worker.kill()
                    worker = None
        if worker is None:
            try:
                worker = _Worker()
            except OSError as exc:
                raise SearchWorkerError(f"cannot start a search worker: {exc}") from exc
        if not cancel._bind(worker.kill):
            worker.kill()
            raise SearchWorkerError("cancelled")
        overdue = threading.Event()

        def kill_overdue() -> None:
            overdue.set()
            worker.kill()

        timer = threading.Timer(request.get("timeout_s", 60.0) + 1.0, kill_overdue)
        timer.daemon = True
        timer.start()
        try:
            answer = worker.ask(request)
        except SearchTimeout:
            self._keep(worker)
            raise
        except BaseException:
            worker.kill()
            if overdue.is_set():
                raise SearchTimeout(0) from None
            raise
        finally:
            timer.cancel()
            cancel._bind(None)
        if cancel.is_set():  # it may have been killed after answering
            worker.kill()
            return answer
        self._keep(worker)
        return answer

    def _keep(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < self.keep_idle and worker.process.poll() is None:
                self._idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def _expire(signum: int, frame: object) -> None:
    raise SearchTimeout(0)


def serve() -> None:
    """A worker's main loop: a request per input line, an answer per output
    line. `SIGALRM` ends a search at its time limit, inside a match too."""
    signal.signal(signal.SIGALRM, _expire)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            request: Any = json.loads(line)
            signal.setitimer(signal.ITIMER_REAL, float(request.get("timeout_s", 60.0)))
            try:
                hits, truncated = search(request)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            answer: dict[str, Any] = {"hits": hits, "truncated": truncated}
        except SearchTimeout as exc:
            answer = {"timed_out": True, "hits_so_far": exc.args[0] if exc.args else 0}
        except Exception as exc:  # a worker answers every request
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer).encode("ascii") + b"\n")
        out.flush()


if __name__ == "__main__":
    serve()
