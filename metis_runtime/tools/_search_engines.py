"""The regex engines of the grep built-in's search, and matching a file's lines.

A pattern runs on RE2 (linear time) when RE2 accepts it and means the same
as Python's `re` on the text (`Engines`); otherwise (a backreference, a
lookaround, `\\d` on non-ASCII text, ...) on Python's `re`, under the time
limit of the search (`_search.py`). `matching_lines` scans a whole file at
once where the pattern allows it (`whole_text_regex`), with the same answer
as searching each line alone; `_engine_paths` is where a worker finds the
optional engines. Standard library only, google-re2 optional: a search
worker imports it (`_search_workers.py`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from typing import Any

try:  # linear-time matching (google-re2); absent, every pattern runs on `re`
    import re2 as _re2  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - the package is a dependency
    _re2 = None

__all__ = ["Engines", "matching_lines", "whole_text_regex"]

# What may make a line's match depend on text beyond the line, or make a
# search of the whole text miss a line that matches alone: string anchors,
# lookarounds, a flag turned off in a group, atomic groups and possessive
# quantifiers (they cannot give back a newline they consumed).
# `\B` too: Python's `\B` never matches an empty string, so an empty line
# alone has none, while the whole text has one at that line's place.
_LINE_BOUND = ("\\A", "\\Z", "\\B", "(?=", "(?!", "(?<", "(?-", "(?>", "*+", "++", "?+", "}+")


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
