"""The grep and glob built-ins' searches, and the worker processes that run grep.

A search is CPU work in the regex engine, which holds the GIL: run in a
thread of the runtime, it would slow the event loop and every other call of
its batch. So it runs in a worker process (`SearchWorkers`), like ripgrep
under other runtimes, and the batch's other calls and the loop go on beside
it. A worker runs this module as a script with `python -I -S`, which starts
in milliseconds; it is given the folder of the optional engines (google-re2,
pathspec) and imports nothing else outside the standard library.

Bounds, each a clear error rather than a hang:
- Engine: a pattern runs on RE2 (linear time) when RE2 accepts it and means
  the same as Python's `re` on the text (`re2_equivalent`); otherwise (a
  backreference, a lookaround, `\\d` on non-ASCII text, ...) on Python's
  `re` under the time limit.
- Time: `timeout_s` per search; the worker's `SIGALRM` ends a search (a
  backtracking `re` search included) and answers `timed_out`; the pool also
  kills a worker that has not answered a second after that.
- Scope: the walk opens every folder and file relative to its parent's
  descriptor without following symlinks (`os.fwalk`), so nothing outside the
  searched folder is read, even if a folder is swapped for a symlink during
  the walk; `glob_paths` lists only paths whose real location is inside its
  base.
- Ignore files (`_ignore.py`): inside a git repository `.gitignore`,
  `.git/info/exclude` and `core.excludesFile` (`global_excludes`, found where
  the environment is: a worker has none), as ripgrep does; everywhere
  ripgrep's `.ignore` and `.rgignore`; `respect_ignore=False` turns them off.

Protocol: one JSON object per line on the worker's stdin (a `SearchRequest`
as a dict), one per line on its stdout: `{"hits": [...], "truncated": b}` or
`{"error": "..."}`. A worker exits at end of input, so it dies with the
runtime; a cancelled search kills its worker.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import fnmatch
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from pathlib import PurePath
from typing import Any
from typing import NotRequired
from typing import TypedDict

if __name__ == "__main__":  # a worker: its argv names where the engines are
    sys.path[:0] = [*sys.argv[1:], os.path.dirname(os.path.abspath(__file__))]

try:  # linear-time matching (google-re2); absent, every pattern runs on `re`
    import re2 as _re2  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - the package is a dependency
    _re2 = None
try:
    from . import _ignore
except ImportError:  # a worker runs this file as a script: the module beside it
    import _ignore  # type: ignore[import-not-found,no-redef]

BINARY_SNIFF = 8192  # bytes looked at to tell a binary file
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


def is_binary(head: bytes) -> bool:
    """Whether a file's first BINARY_SNIFF bytes make it binary (a NUL byte)."""
    return b"\x00" in head


# What may make a line's match depend on text beyond the line, or make a
# search of the whole text miss a line that matches alone: string anchors,
# lookarounds, a flag turned off in a group, atomic groups and possessive
# quantifiers (they cannot give back a newline they consumed).
# `\B` too: Python's `\B` never matches an empty string, so an empty line
# alone has none, while the whole text has one at that line's place.
_LINE_BOUND = ("\\A", "\\Z", "\\B", "(?=", "(?!", "(?<", "(?-", "(?>", "*+", "++", "?+", "}+")


class SearchRequest(TypedDict):
    pattern: str
    base: str  # a directory or a file, resolved
    glob: str | None
    shown_base: str  # how `base` (or a file's directory) is shown: "." or a path
    max_matches: int
    max_line: int
    max_file_bytes: int
    timeout_s: float
    respect_ignore: bool
    global_excludes: NotRequired[str | None]  # core.excludesFile (`_ignore.excludes_file`)
    only: NotRequired[list[str] | None]  # when set, the only files read (paths relative to base)


class SearchTimeout(Exception):
    """A search ran past its `timeout_s`."""


# RE2 syntax that Python's `re` reads differently: POSIX classes (`[[:alpha:]]`
# is a plain set to `re`), `{,n}` (a literal to RE2). And classes whose RE2
# meaning is ASCII-only, so the same only on ASCII text.
_RE2_NEVER = ("[:", "{,")
_RE2_ASCII_ONLY = ("\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "(?i")


class Engines:
    """A pattern compiled for both engines: RE2 where it means what `re` means.

    RE2 searches the text's UTF-8 bytes: google-re2's `str` matching converts
    offsets per match (milliseconds for a few dozen matches), its `bytes`
    matching does not."""

    __slots__ = ("ascii_only", "re", "re2", "re2_whole", "whole")

    def __init__(self, pattern: str) -> None:
        self.re = re.compile(pattern)
        self.whole = whole_text_regex(self.re)
        self.re2: Any = None
        self.re2_whole: Any = None
        self.ascii_only = any(part in pattern for part in _RE2_ASCII_ONLY)
        if _re2 is None or any(part in pattern for part in _RE2_NEVER):
            return
        options = _re2.Options()
        options.log_errors = False
        try:
            encoded = pattern.encode("utf-8")
            self.re2 = _re2.compile(encoded, options=options)
            if self.whole is not None:
                self.re2_whole = _re2.compile(b"(?m)" + encoded, options=options)
        except Exception:  # RE2 refuses it (backreference, lookaround): `re` only
            self.re2 = self.re2_whole = None

    def for_text(self, text: str) -> tuple[str | bytes, Any, Any]:
        """(what to search, line regex, whole-text regex) for `text`: its UTF-8
        bytes and RE2, or the text itself and `re`."""
        if self.re2 is not None and (not self.ascii_only or text.isascii()):
            return text.encode("utf-8", "surrogatepass"), self.re2, self.re2_whole
        return text, self.re, self.whole


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


def matching_lines(text: Any, regex: Any, whole: Any) -> Iterator[tuple[int, str]]:
    """(line number, line) of each line of `text` (a `str`, or UTF-8 `bytes`
    searched by RE2) that `regex` matches, the line searched alone and without
    its line end, in order. With `whole` (from `whole_text_regex`) the regex
    engine scans the text once: a match that lies on one line means that line
    matches alone; only the lines a match spans (it holds a newline) are
    searched one by one. Same answer, and one engine call per file where most
    matches stay on their line."""
    nl: Any
    cr: Any
    crlf: Any
    nl, cr, crlf = ("\n", "\r", "\r\n") if isinstance(text, str) else (b"\n", b"\r", b"\r\n")

    def shown(line: Any) -> str:
        return line if isinstance(line, str) else line.decode("utf-8", "surrogatepass")

    if cr in text and whole is not None:
        # A line is searched without its "\r\n" or final "\r": the same in the whole text.
        text = text.replace(crlf, nl)
        if text.endswith(cr):  # a last line ended by "\r" alone: still a line
            text = text[:-1] + nl
    if whole is None:
        lines = text.split(nl)
        if lines and not lines[-1]:
            lines.pop()
        for lineno, line in enumerate(lines, 1):
            line = line.removesuffix(cr)
            if regex.search(line) is not None:
                yield lineno, shown(line)
        return
    size = len(text)
    count = text.count(nl) + (0 if not text or text.endswith(nl) else 1)
    lineno, start, done = 1, 0, 0  # the line holding the match; the last line searched
    for match in whole.finditer(text):
        first, stop = match.start(), match.end()
        skipped = text.count(nl, start, first)
        if skipped:
            lineno += skipped
            start = text.rfind(nl, start, first) + 1
        if text.find(nl, first, stop) < 0:  # on one line: that line matches alone
            if done < lineno <= count:
                done = lineno
                newline = text.find(nl, start)
                yield lineno, shown(text[start : size if newline < 0 else newline])
            continue
        last = stop - 1
        while True:  # every line from the match's first character to its last
            newline = text.find(nl, start)
            end = size if newline < 0 else newline
            if done < lineno <= count:
                done = lineno
                line = text[start:end]
                if regex.search(line) is not None:
                    yield lineno, shown(line)
            if newline < 0 or last <= end:
                break
            lineno, start = lineno + 1, newline + 1


def _name_filter(name_glob: str | None) -> Callable[[str], bool] | None:
    if name_glob is None:
        return None
    if "/" in name_glob:
        return lambda rel: PurePath(rel).match(name_glob)
    # what PurePath.match does with a one-part pattern, without the parsing
    return lambda rel: fnmatch.fnmatchcase(rel.rpartition("/")[2], name_glob)


def walk_at(
    base: str,
    name_glob: str | None,
    respect_ignore: bool = True,
    global_excludes: str | None = None,
) -> Iterator[tuple[int | None, str, str]]:
    """(folder descriptor, name, path relative to `base`) of each file under
    `base`, in a stable order. Folders are opened relative to their parent
    without following symlinks, so the walk never leaves `base`; VCS folders
    and what the ignore files exclude (`_ignore.py`) are skipped. A
    descriptor is valid until the next item. `base` a file: (None, base, name)."""
    if not os.path.isdir(base):
        yield None, base, os.path.basename(base)
        return
    keep = _name_filter(name_glob)
    found = _ignore.rules_for(base, global_excludes) if respect_ignore else None
    rules: dict[str, _ignore.Rules] = {}
    top = ""
    if found is not None:
        rules[""], top = found
    for root, dirs, files, root_fd in os.fwalk(base, follow_symlinks=False):
        rel_dir = "" if root == base else root[len(base) + 1 :]
        prefix = rel_dir + "/" if rel_dir else ""
        here = rules.get(rel_dir)
        if here is not None:
            in_repo = f"{top}/{rel_dir}".strip("/")
            here = here.entering(in_repo, root_fd)
            repo_prefix = in_repo + "/" if in_repo else ""
        kept = []
        for d in sorted(dirs):
            if d in VCS_DIRS or (here is not None and here.ignored(repo_prefix + d, True)):
                continue
            kept.append(d)
            if here is not None:
                rules[prefix + d] = here
        dirs[:] = kept
        for name in sorted(files):
            rel = prefix + name
            if here is not None and here.ignored(repo_prefix + name, False):
                continue
            if keep is None or keep(rel):
                yield root_fd, name, rel
        rules.pop(rel_dir, None)


def walk_files(
    base: str,
    name_glob: str | None,
    respect_ignore: bool = True,
    global_excludes: str | None = None,
) -> Iterator[tuple[str, str]]:
    """(path, path relative to `base`) of each file `walk_at` yields."""
    for dir_fd, name, rel in walk_at(base, name_glob, respect_ignore, global_excludes):
        yield (name if dir_fd is None else os.path.join(base, rel)), rel


def read_text(path: str, max_bytes: int, dir_fd: int | None = None) -> str | None:
    """The file's text, or None if it is not a readable, regular, small, text
    file. A symlink is not followed; with `dir_fd`, `path` is relative to it."""
    try:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError:
        return None  # unreadable or a symlink: skipped, not an error of the whole search
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        # A short read of a regular file is its end: one read when the size holds.
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read to the bound
            chunks = [data]
            while (chunk := os.read(fd, 65536)) and sum(map(len, chunks)) <= max_bytes:
                chunks.append(chunk)
            data = b"".join(chunks)
            if len(data) > max_bytes:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)
    if is_binary(data[:BINARY_SNIFF]):
        return None
    return data.decode("utf-8", "replace")


def search(
    request: SearchRequest, stop: Cancellation | None = None, *, linear_only: bool = False
) -> tuple[list[str], bool]:
    """`path:line:text` of each matching line, in file then line order; and
    whether the search stopped at `max_matches`. Past `timeout_s` (checked
    between lines here; a worker's alarm also ends one long match) it raises
    `SearchTimeout`. `linear_only` (a search in this process, where nothing
    can stop one long match): a text that would need Python's backtracking
    `re` raises `SearchUnbounded` instead of running it."""
    engines = Engines(request["pattern"])
    if linear_only and engines.re2 is None:
        raise SearchUnbounded()
    deadline = time.monotonic() + request.get("timeout_s", 60.0)
    shown_base, max_matches, max_line = (
        request["shown_base"],
        request["max_matches"],
        request["max_line"],
    )
    hits: list[str] = []
    walk = walk_at(
        request["base"],
        request["glob"],
        request.get("respect_ignore", True),
        request.get("global_excludes"),
    )
    only = request.get("only")
    visible = None if only is None else frozenset(only)
    for dir_fd, name, rel in walk:
        if stop is not None and stop.is_set():
            break
        if time.monotonic() > deadline:
            raise SearchTimeout(len(hits))
        if visible is not None and rel not in visible:
            continue  # hidden: the gate would not let a Read open it
        text = read_text(name, request["max_file_bytes"], dir_fd)
        if text is None:
            continue
        subject, regex, whole = engines.for_text(text)
        if linear_only and regex is not engines.re2:
            raise SearchUnbounded()
        shown = rel if shown_base == "." else os.path.join(shown_base, rel)
        for lineno, line in matching_lines(subject, regex, whole):
            if len(hits) == max_matches:
                return hits, True
            if len(hits) % 64 == 0 and time.monotonic() > deadline:
                raise SearchTimeout(len(hits))
            if len(line) > max_line:
                line = line[:max_line] + " [line truncated]"
            hits.append(f"{shown}:{lineno}:{line}")
    return hits, False


def glob_paths(
    base: Path,
    pattern: str,
    stop: threading.Event,
    limit: int,
    hidden: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """Paths under `base` matching `pattern` (at most `limit` + 1), only those
    whose real location is inside `base`: a symlink out of it, or a `..` in
    the pattern, never lists anything outside; none that `hidden` hides.
    ValueError: a bad pattern."""
    if os.path.isabs(pattern) or ".." in PurePath(pattern).parts:
        raise ValueError("must be relative and stay inside 'path' (no '..')")
    root = os.path.realpath(base)
    found: list[Path] = []
    for path in base.glob(pattern):
        if stop.is_set() or len(found) > limit:
            break
        real = os.path.realpath(path)
        if (real == root or real.startswith(root + os.sep)) and not (hidden and hidden(path)):
            found.append(path)
    return found


# --- worker processes -------------------------------------------------------------------


class SearchWorkerError(Exception):
    """A worker died, could not start, or answered something unreadable."""


class SearchUnbounded(Exception):
    """The pattern needs Python's `re` on this text, and the search runs where
    no alarm can end one backtracking match (no worker process could run it)."""


def _engine_paths() -> list[str]:
    """Folders a worker needs on its path for google-re2 and pathspec."""
    paths: list[str] = []
    for module in (_re2, sys.modules.get("pathspec")):
        where = getattr(module, "__file__", None)
        if isinstance(where, str):
            folder = os.path.dirname(os.path.dirname(os.path.abspath(where)))
            if folder not in paths:
                paths.append(folder)
    return paths


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
