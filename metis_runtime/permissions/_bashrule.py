"""Bash rule patterns, as Claude Code documents them
(https://code.claude.com/docs/en/permissions, "Bash"):

- `Bash(npm run build)` matches that command exactly;
- `*` at any position matches any characters, spaces included;
- a trailing ` *` is a word boundary: `Bash(ls *)` matches `ls` and `ls -la`,
  not `lsof`; `Bash(ls*)` matches `lsof`;
- the legacy `:*` suffix means the same as a trailing ` *`; anywhere else a
  `:` is literal (`Bash(git:* push)` matches no git command);
- whitespace runs match one space (changelog 2.1.98).

Docs gaps, read strictly: a quoted `*` (`Bash(echo "*")`) is a literal star;
when a trailing ` *` is not the only wildcard, a deny or ask rule still
reads it as a word boundary, an allow rule does not.

A command is matched as its words joined by one space. For deny and ask a
word only known at run time may stand for any text (`may_match`); for allow
it must fall inside a `*` of the rule (`surely_matches`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from collections.abc import Sequence

from attrs import frozen

STAR = "\x00*"  # a wildcard symbol in a compiled pattern
_SENTINEL = "\x00"  # a run-time word, in the text an allow regex is matched against


@frozen
class BashPattern:
    """A compiled Bash rule: `symbols` (characters and STAR), the positions
    where a deny/ask match may end (`deny_ends`) and an allow match may end
    (`allow_ends`), and the allow regex."""

    text: str
    symbols: tuple[str, ...]
    deny_ends: frozenset[int]
    allow_ends: frozenset[int]
    allow_regex: str
    deny_regex: str
    exact: bool  # no wildcard at all
    literal_head: tuple[str, ...]  # whole words before the first wildcard

    @property
    def form(self) -> str:
        return "exact" if self.exact else "wildcard"


def _tokens(spec: str) -> list[str]:
    """Quote-aware: characters and STAR, whitespace runs as one space."""
    out: list[str] = []
    i, n = 0, len(spec)
    while i < n:
        c = spec[i]
        if c in " \t\n":
            while i < n and spec[i] in " \t\n":
                i += 1
            if out and out[-1] != " ":
                out.append(" ")
            continue
        if c == "*":
            out.append(STAR)
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(spec[i])
        elif c in "'\"" and spec.find(c, i + 1) > 0:
            close = spec.find(c, i + 1)
            out.extend(spec[i + 1 : close])
            i = close
        else:
            out.append(c)  # an unbalanced quote is a literal character
        i += 1
    while out and out[-1] == " ":
        out.pop()
    return out


@functools.lru_cache(maxsize=4096)
def compile_bash(spec: str) -> BashPattern:
    """Compile the specifier of a `Bash(...)` rule (never raises)."""
    body = spec.strip()
    legacy = body.endswith(":*") and len(body) > 2
    if legacy:
        body = body[:-2].rstrip() + " *"
    symbols = _tokens(body)
    stars = symbols.count(STAR)
    boundary = len(symbols) >= 2 and symbols[-1] == STAR and symbols[-2] == " "
    end = len(symbols)
    deny_ends = {end}
    allow_ends = {end}
    if boundary:
        deny_ends.add(end - 2)
        if stars == 1:
            allow_ends.add(end - 2)
    plain = "".join(".*" if s == STAR else re.escape(s) for s in symbols)
    bounded = plain
    if boundary:
        bounded = "".join(".*" if s == STAR else re.escape(s) for s in symbols[:-2]) + "(?: .*)?"
    head_text = "".join(s for s in symbols[: symbols.index(STAR)] if s != STAR) if stars else ""
    head_words = head_text.split(" ")
    literal_head = tuple(head_words[:-1]) if stars else tuple("".join(symbols).split(" "))
    return BashPattern(
        text=spec,
        symbols=tuple(symbols),
        deny_ends=frozenset(deny_ends),
        allow_ends=frozenset(allow_ends),
        allow_regex=bounded if stars == 1 else plain,
        deny_regex=bounded,
        exact=stars == 0,
        literal_head=literal_head,
    )


def _closure(states: set[int], symbols: Sequence[str]) -> set[int]:
    out = set(states)
    stack = list(states)
    while stack:
        i = stack.pop()
        if i < len(symbols) and symbols[i] == STAR and i + 1 not in out:
            out.add(i + 1)
            stack.append(i + 1)
    return out


def may_match(
    pattern: BashPattern, words: Sequence[str], dynamic: Sequence[bool], open_ended: bool
) -> bool:
    """Whether some run-time value of the dynamic words (and of arguments
    appended at run time) makes the rule match."""
    if not any(dynamic) and not open_ended:
        return _fullmatch(pattern.deny_regex)(" ".join(words)) is not None
    symbols = pattern.symbols
    states = _closure({0}, symbols)
    # A run-time word may expand to nothing or to many words: it stands for
    # any text, the blank before it included.
    pieces: list[str | None] = []
    for i, word in enumerate(words):
        if dynamic[i]:
            pieces.append(None)
            continue
        if i and not dynamic[i - 1]:
            pieces.append(" ")
        pieces.append(word)
    if open_ended:
        pieces.append(None)  # " " and any words, or nothing
    for piece in pieces:
        if piece is None:
            low = min(states, default=len(symbols) + 1)
            states = set(range(low, len(symbols) + 1))
            continue
        for ch in piece:
            nxt: set[int] = set()
            for s in states:
                if s < len(symbols):
                    if symbols[s] == STAR:
                        nxt.add(s)
                    elif symbols[s] == ch:
                        nxt.add(s + 1)
            states = _closure(nxt, symbols)
            if not states:
                return False
    return bool(states & pattern.deny_ends)


def surely_matches(
    pattern: BashPattern, words: Sequence[str], dynamic: Sequence[bool], open_ended: bool
) -> bool:
    """Whether the rule matches whatever the dynamic words turn out to be:
    each must fall inside a `*` (`Bash(echo *)` allows `echo *`)."""
    text = " ".join(_SENTINEL if d else w for w, d in zip(words, dynamic, strict=True))
    if open_ended:
        text += " " + _SENTINEL  # arguments appended at run time
    return _fullmatch(pattern.allow_regex)(text) is not None


@functools.lru_cache(maxsize=4096)
def _fullmatch(regex: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(regex, re.DOTALL).fullmatch
