"""The grep built-in's search, and the worker processes that run it.

A search is CPU work in the regex engine, which holds the GIL: run in a
thread of the runtime, it would slow the event loop and every other call of
its batch. So it runs in a worker process (`SearchWorkers`), like ripgrep
under other runtimes, and the batch's other calls and the loop go on beside
it. This module imports only the standard library: a worker runs it as a
script with `python -I -S`, which starts in milliseconds.

Protocol: one JSON object per line on the worker's stdin (a `SearchRequest`
as a dict), one per line on its stdout: `{"hits": [...], "truncated": b}` or
`{"error": "..."}`. A worker exits at end of input, so it dies with the
runtime; a cancelled search kills its worker.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import json
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any, TypedDict

BINARY_SNIFF = 8192  # bytes looked at to tell a binary file
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


def is_binary(head: bytes) -> bool:
    """Whether a file's first BINARY_SNIFF bytes make it binary (a NUL byte)."""
    return b"\x00" in head


# What may make a line's match depend on text beyond the line, or make a
# search of the whole text miss a line that matches alone: string anchors,
# lookarounds, a flag turned off in a group, atomic groups and possessive
# quantifiers (they cannot give back a newline they consumed).
_LINE_BOUND = ("\\A", "\\Z", "(?=", "(?!", "(?<", "(?-", "(?>", "*+", "++", "?+", "}+")


class SearchRequest(TypedDict):
    pattern: str
    base: str  # a directory or a file, resolved
    glob: str | None
    shown_base: str  # how `base` (or a file's directory) is shown: "." or a path
    max_matches: int
    max_line: int
    max_file_bytes: int


def whole_text_regex(regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """`regex` compiled to search a whole file at once (`^`/`$` at line
    ends), or None if it may use a construct of `_LINE_BOUND`. Without those
    constructs a line that matches alone lies under some match in the whole
    text (the search tries every start in order and backtracks fully), so
    checking only the lines that matches touch finds every matching line."""
    if any(part in regex.pattern for part in _LINE_BOUND):
        return None
    try:
        return re.compile(regex.pattern, regex.flags | re.MULTILINE)
    except re.error:
        return None


def matching_lines(
    text: str, regex: re.Pattern[str], whole: re.Pattern[str] | None
) -> Iterator[tuple[int, str]]:
    """(line number, line) of each line of `text` that `regex` matches, the
    line searched alone and without its line end, in order. With `whole`
    (from `whole_text_regex`) the regex engine scans the text once and only
    the lines its matches touch are searched one by one; same answer."""
    if whole is None or "\r" in text:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for lineno, line in enumerate(lines, 1):
            line = line.removesuffix("\r")
            if regex.search(line) is not None:
                yield lineno, line
        return
    size = len(text)
    count = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    lineno, start, done = 1, 0, 0  # the line holding the match; the last line searched
    for match in whole.finditer(text):
        first = match.start()
        last = max(first, match.end() - 1)
        skipped = text.count("\n", start, first)
        if skipped:
            lineno += skipped
            start = text.rfind("\n", start, first) + 1
        while True:  # every line from the match's first character to its last
            newline = text.find("\n", start)
            end = size if newline < 0 else newline
            if done < lineno <= count:
                done = lineno
                line = text[start:end]
                if regex.search(line) is not None:
                    yield lineno, line
            if newline < 0 or last <= end:
                break
            lineno, start = lineno + 1, newline + 1


def walk_files(base: str, name_glob: str | None) -> Iterator[tuple[str, str]]:
    """(path, path relative to `base`) of each regular file under `base`, in
    a stable order, without following symlinks. Plain strings and `os`
    calls: pathlib costs several times more on this hot path."""
    if not os.path.isdir(base):
        yield base, os.path.basename(base)
        return
    keep: Callable[[str], bool] | None
    if name_glob is None:
        keep = None
    elif "/" in name_glob:
        keep = lambda rel: PurePath(rel).match(name_glob)  # noqa: E731
    else:  # what PurePath.match does with a one-part pattern, without the parsing
        keep = lambda rel: fnmatch.fnmatchcase(rel.rpartition("/")[2], name_glob)  # noqa: E731
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in VCS_DIRS)
        prefix = "" if root == base else root[len(base) + 1 :] + "/"
        for name in sorted(files):
            rel = prefix + name
            if keep is None or keep(rel):
                yield os.path.join(root, name), rel


def read_text(path: str, max_bytes: int) -> str | None:
    """The file's text, or None if it is not a readable, regular, small, text file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # unreadable or a symlink: skipped, not an error of the whole search
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        # A short read of a regular file is its end: one read when the size holds.
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read to the end
            chunks = [data]
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
            data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    if is_binary(data[:BINARY_SNIFF]):
        return None
    return data.decode("utf-8", "replace")


def search(request: SearchRequest, stop: Cancellation | None = None) -> tuple[list[str], bool]:
    """`path:line:text` of each matching line, in file then line order; and
    whether the search stopped at `max_matches`."""
    regex = re.compile(request["pattern"])
    whole = whole_text_regex(regex)
    shown_base, max_matches, max_line = (
        request["shown_base"],
        request["max_matches"],
        request["max_line"],
    )
    hits: list[str] = []
    for file, rel in walk_files(request["base"], request["glob"]):
        if stop is not None and stop.is_set():
            break
        text = read_text(file, request["max_file_bytes"])
        if text is None:
            continue
        shown = rel if shown_base == "." else os.path.join(shown_base, rel)
        for lineno, line in matching_lines(text, regex, whole):
            if len(hits) == max_matches:
                return hits, True
            if len(line) > max_line:
                line = line[:max_line] + " [line truncated]"
            hits.append(f"{shown}:{lineno}:{line}")
    return hits, False


# --- worker processes -------------------------------------------------------------------


class SearchWorkerError(Exception):
    """A worker died, could not start, or answered something unreadable."""


class _Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", __file__],
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


class Cancellation:
    """A cancel flag that one thread sets and another's blocking work obeys:
    a search in this process checks `is_set`; a search in a worker has its
    worker killed, which ends the read that waits for the answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._hook: Callable[[], None] | None = None

    def set(self) -> None:
        with self._lock:
            self._set = True
            hook, self._hook = self._hook, None
        if hook is not None:
            hook()

    def is_set(self) -> bool:
        return self._set

    def _bind(self, hook: Callable[[], None] | None) -> bool:
        with self._lock:
            self._hook = hook
            return not self._set


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
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            try:
                worker = _Worker()
            except OSError as exc:
                raise SearchWorkerError(f"cannot start a search worker: {exc}") from exc
        if not cancel._bind(worker.kill):
            worker.kill()
            raise SearchWorkerError("cancelled")
        try:
            answer = worker.ask(request)
        except BaseException:
            worker.kill()
            raise
        finally:
            cancel._bind(None)
        if cancel.is_set():  # it may have been killed after answering
            worker.kill()
            return answer
        with self._lock:
            if len(self._idle) < self.keep_idle:
                self._idle.append(worker)
                return answer
        worker.kill()
        return answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def serve() -> None:
    """A worker's main loop: a request per input line, an answer per output line."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            request: Any = json.loads(line)
            hits, truncated = search(request)
            answer: dict[str, Any] = {"hits": hits, "truncated": truncated}
        except Exception as exc:  # a worker answers every request
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer).encode("ascii") + b"\n")
        out.flush()


if __name__ == "__main__":
    serve()
