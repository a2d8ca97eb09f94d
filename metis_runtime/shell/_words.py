"""tree-sitter-bash, loaded on first use, and what a shell word means.

A word is *static* when the shell would pass it on as written (after quote
removal); anything with an expansion, substitution, unquoted glob or brace
is *dynamic*: known only when the command runs.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any


@functools.cache
def parser() -> Any:
    """The tree-sitter parser for bash (imported lazily: it is a C extension)."""
    import tree_sitter_bash
    from tree_sitter import Language
    from tree_sitter import Parser

    return Parser(Language(tree_sitter_bash.language()))


def unquote(raw: str) -> str:
    """Shell quote removal of a word without expansions."""
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        elif c == "'":
            close = raw.find("'", i + 1)
            close = n if close < 0 else close
            out.append(raw[i + 1 : close])
            i = close + 1
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    if raw[i + 1] != "\n":
                        out.append(raw[i + 1])
                    i += 2
                else:
                    out.append(raw[i])
                    i += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_EXPANSION_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789{(@*#?$!-'\""
)


def _quoting(raw: str) -> Iterator[tuple[int, str, bool, bool]]:
    """Each character of `raw` not escaped by a backslash outside single
    quotes, with whether it stands inside single and inside double quotes
    (a quote character reports the state before it)."""
    single = double = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and not single:
            i += 2
            continue
        yield i, c, single, double
        if c == "'" and not double:
            single = not single
        elif c == '"' and not single:
            double = not double
        i += 1


def has_active_expansion(raw: str) -> bool:
    """Whether `raw` has an unescaped `$x`, `${`, `$(` or backquote outside single quotes."""
    return any(
        not single and c in "`$" and (c == "`" or raw[i + 1 : i + 2] in _EXPANSION_START)
        for i, c, single, _ in _quoting(raw)
        if c not in "'\""
    )


def has_glob_or_brace(raw: str) -> bool:
    """Whether `raw` has an unquoted glob or brace expansion."""
    if raw == "{}":
        return False  # literal; find -exec's placeholder
    for i, c, single, double in _quoting(raw):
        if single or double:
            continue
        if c in "*?":
            return True
        if c == "[" and "]" in raw[i + 1 :]:
            return True
        if c == "{" and _is_brace_expansion(raw[i + 1 :]):
            return True
    return False


def _is_brace_expansion(after: str) -> bool:
    """`{a,b}` and `{1..3}` expand; `{}` and `{x}` stay literal."""
    close = after.find("}")
    return close >= 0 and ("," in after[:close] or ".." in after[:close])
