"""The grep built-in's search: the request, its bounds and its cancellation.

`search` answers a `SearchRequest` with the matching lines of the files the
walk yields (`_search_walk.py`), matched by the engines of `_search_engines.py`;
it runs in a worker process (`_search_workers.py`), or in this process when
only a linear-time engine is needed (`linear_only`). Bounds, each a clear
error rather than a hang:
- Engine: RE2 where it means what `re` means, else Python's `re` under the
  time limit (`SearchUnbounded` where nothing could stop it).
- Time: `timeout_s` per search (`SearchTimeout`); a worker's `SIGALRM` also
  ends one long match.
- Visibility: with `only`, the files outside it (those the gate hides) are
  never read.
Standard library only: a search worker imports it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import NotRequired
from typing import TypedDict

try:
    from ._search_engines import Engines
    from ._search_engines import matching_lines
    from ._search_walk import read_text
    from ._search_walk import walk_at
except ImportError:  # a worker runs this file as a script: the modules beside it
    from _search_engines import Engines  # type: ignore[import-not-found,no-redef]
    from _search_engines import matching_lines  # type: ignore[no-redef]
    from _search_walk import read_text  # type: ignore[import-not-found,no-redef]
    from _search_walk import walk_at  # type: ignore[no-redef]


__all__ = ["Cancellation", "SearchRequest", "SearchTimeout", "SearchUnbounded", "search"]


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


class SearchUnbounded(Exception):
    """The pattern needs Python's `re` on this text, and the search runs where
    no alarm can end one backtracking match (no worker process could run it)."""


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
