"""What one shell word expands to, where the line itself shows it.

Bash's order (bash(1), "EXPANSION"): brace expansion, tilde expansion,
parameter expansion, word splitting, pathname expansion. This module does
the first four for the forms a reader can see in the line: `{a,b}` and
`{a..z}`, `~` and `$HOME`/`${HOME}` (kept as `~`: the gate expands it, so
a cached analysis never holds a home directory), `$PWD` (kept as `.`),
and variables assigned earlier on the same line (`f=~/.ssh/id_rsa; cat
$f`, through `lookup`). Globs are left as patterns for the gate, which
sees the disk. Anything else (`$(...)`, backquotes, `${x:-y}`, `$1`,
`$'...'`, an unknown variable) makes the word unknown: `None`.

Claude Code 2.1.163+ catches `$HOME` spellings in Read denies
(code.claude.com/docs/en/changelog); issue 26 adds braces and same-line
variables. `tests/runtime/test_shell_expand.py` compares this with bash.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from collections.abc import Sequence

from ._types import Expansion

# A variable's values as the line shows them, and whether they are all it
# can hold (False: it may still hold what it held before the line).
Values = tuple[tuple[str, ...], bool]
Lookup = Callable[[str], Values | None]

_HOME = "\x01"  # the home directory, until the word is put together
LIMIT = 256  # words one word may expand to before it counts as unknown

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEQUENCE = re.compile(r"(-?\d+|[^\d])\.\.(-?\d+|[^\d])(?:\.\.(-?\d+))?")


class _Unknown(Exception):
    pass


# An atom: (char, quoted) for a character; (None, name) for `$name`.
_Atom = tuple[str | None, object]


def _atoms(raw: str) -> list[_Atom]:
    """`raw` as characters (with whether quoted) and variable references."""
    out: list[_Atom] = []
    i, n = 0, len(raw)
    double = False
    while i < n:
        c = raw[i]
        if c == "\\":
            nxt = raw[i + 1 : i + 2]
            if double and nxt not in ("$", "`", '"', "\\", "\n"):
                out.append(("\\", True))
                i += 1
                continue
            if nxt and nxt != "\n":
                out.append((nxt, True))
            i += 2
        elif c == "'" and not double:
            close = raw.find("'", i + 1)
            if close < 0:
                raise _Unknown
            out.append(("", True))  # marks a quoted (possibly empty) part
            out.extend((ch, True) for ch in raw[i + 1 : close])
            i = close + 1
        elif c == '"':
            double = not double
            out.append(("", True))
            i += 1
        elif c == "`":
            raise _Unknown
        elif c == "$":
            i = _dollar(raw, i, double, out)
        else:
            out.append((c, double))
            i += 1
    if double:
        raise _Unknown
    return out


def _dollar(raw: str, i: int, double: bool, out: list[_Atom]) -> int:
    nxt = raw[i + 1 : i + 2]
    if nxt == "{":
        close = raw.find("}", i + 2)
        name = raw[i + 2 : close] if close > 0 else ""
        if _NAME.fullmatch(name) is None:
            raise _Unknown  # ${x:-y}, ${#x}, ${x[0]}, ...
        out.append((None, (name, double)))
        return close + 1
    m = _NAME.match(raw, i + 1)
    if m is not None:
        out.append((None, (m.group(0), double)))
        return m.end()
    if nxt == "" or nxt in " \t\n/.,:=+%" or (nxt == '"' and double):
        out.append(("$", double))  # a literal dollar
        return i + 1
    raise _Unknown  # $(, $((, $', $", $1, $@, $?, ...


def _braces(atoms: list[_Atom]) -> list[list[_Atom]]:
    """Brace expansion, leftmost first (bash(1), "Brace Expansion")."""
    for i, (ch, quoted) in enumerate(atoms):
        if ch != "{" or quoted:
            continue
        depth, commas, close = 0, [], -1
        for j in range(i + 1, len(atoms)):
            c, q = atoms[j]
            if q or c is None:
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    close = j
                    break
                depth -= 1
            elif c == "," and depth == 0:
                commas.append(j)
        if close < 0:
            continue
        prefix, suffix = atoms[:i], atoms[close + 1 :]
        if commas:
            cuts = [i, *commas, close]
            alternatives = [atoms[a + 1 : b] for a, b in itertools.pairwise(cuts)]
        else:
            body = atoms[i + 1 : close]
            if any(q or c is None for c, q in body):
                continue
            values = _sequence("".join(str(c) for c, _ in body))
            if values is None:
                continue
            alternatives = [[(ch2, False) for ch2 in v] for v in values]
        out: list[list[_Atom]] = []
        for alt in alternatives:
            out.extend(_braces(prefix + alt + suffix))
            if len(out) > LIMIT:
                raise _Unknown
        return out
    return [atoms]


def _sequence(text: str) -> list[str] | None:
    m = _SEQUENCE.fullmatch(text)
    if m is None:
        return None
    a, b, step_text = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    numeric = re.fullmatch(r"-?\d+", a) is not None
    if numeric != (re.fullmatch(r"-?\d+", b) is not None):
        return None
    if numeric:
        lo, hi = int(a), int(b)
        width = max(len(a), len(b)) if re.match(r"-?0\d", a) or re.match(r"-?0\d", b) else 0
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        if len(rng) > LIMIT:
            raise _Unknown
        return [str(v).zfill(width) if v >= 0 else "-" + str(-v).zfill(width - 1) for v in rng]
    lo, hi = ord(a), ord(b)
    rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
    return [chr(v) for v in rng]


# A character after substitution: (char, quoted, split): `split` marks an
# unquoted character that came from a variable (word splitting applies).
_Char = tuple[str, bool, bool]


def _substitute(atoms: list[_Atom], lookup: Lookup) -> tuple[list[list[_Char]], bool]:
    """Every way the variables may expand, and whether that list is complete."""
    pieces: list[list[list[_Char]]] = []
    complete = True
    first = _first(atoms)
    for index, (ch, info) in enumerate(atoms):
        if ch is not None:
            pieces.append([[(ch, bool(info), False)]])
            continue
        assert isinstance(info, tuple)
        name: str = info[0]
        quoted: bool = info[1]
        found = lookup(name)
        if found is None:
            after = _first(atoms[index + 1 :])
            ends = after is None or atoms[index + 1 + after][0] == "/"
            if name in ("HOME", "PWD") and index == first and ends:
                mark = _HOME if name == "HOME" else "."
                pieces.append([[(mark, False, False)]])  # the gate resolves it
                continue
            raise _Unknown
        values, all_known = found
        complete = complete and all_known
        if not values or (index != first and any(v.startswith("~") for v in values)):
            raise _Unknown  # a `~` expanded at assignment: only the gate knows the home
        pieces.append([_value_chars(v, bool(quoted)) for v in values])
    out: list[list[_Char]] = []
    for combo in itertools.product(*pieces):
        out.append([c for part in combo for c in part])
        if len(out) > LIMIT:
            raise _Unknown
    return out, complete


def _value_chars(value: str, quoted: bool) -> list[_Char]:
    """A variable's value as characters; a leading `~` is the home an
    assignment expanded (a quoted one was stored as `./~`)."""
    chars = [(c, quoted, not quoted) for c in value]
    if value.startswith("~"):
        chars[0] = (_HOME, quoted, False)
    return chars


def _first(atoms: Sequence[_Atom]) -> int | None:
    """Index of the first atom that is not an (empty) quote mark."""
    return next((i for i, (ch, _) in enumerate(atoms) if ch != ""), None)


def _fields(chars: list[_Char], had_quote: bool) -> list[list[_Char]]:
    """Word splitting at unquoted blanks that came from a variable."""
    fields: list[list[_Char]] = [[]]
    for c in chars:
        if c[2] and c[0] in " \t\n":
            if fields[-1]:
                fields.append([])
            continue
        fields[-1].append(c)
    kept = [f for f in fields if f and any(ch for ch, _, _ in f)]
    if not kept and had_quote and len(fields) == 1:
        return [[]]  # `""` or `"$empty"`: one empty word
    return kept


def _is_glob(field: Sequence[_Char]) -> bool:
    for i, (ch, quoted, _) in enumerate(field):
        if quoted:
            continue
        if ch in "*?":
            return True
        if ch == "[" and any(c == "]" for c, _, _ in field[i + 2 :]):
            return True
    return False


def expand_word(raw: str, lookup: Lookup) -> tuple[Expansion, bool] | None:
    """The words `raw` expands to (and whether the list is complete), or None."""
    if _HOME in raw:
        return None
    try:
        atoms = _atoms(raw)
        had_quote = any(ch == "" and q for ch, q in atoms)
        words: list[tuple[str, bool]] = []
        complete = True
        for alternative in _braces(atoms):
            if alternative[:1] == [("~", False)]:  # a tilde prefix only opens the word
                if alternative[1:2] and alternative[1][0] != "/":
                    return None  # `~user`, `~+`, `~0`: another home or the directory stack
                alternative = [(_HOME, False), *alternative[1:]]
            expanded, known = _substitute(alternative, lookup)
            complete = complete and known
            for chars in expanded:
                for field in _fields(chars, had_quote):
                    glob = _is_glob(field)
                    text = "".join(
                        f"[{ch}]" if glob and quoted and ch and ch in "*?[" else ch
                        for ch, quoted, _ in field
                    )
                    if text.startswith("~"):
                        text = "./" + text  # not a tilde prefix: a plain name
                    text = text.replace(_HOME, "~")
                    words.append((text, glob))
                    if len(words) > LIMIT:
                        return None
    except _Unknown:
        return None
    globbed = any(g for _, g in words)
    texts = tuple(w if g or not globbed else escape_glob(w) for w, g in words)
    return Expansion(words=texts, globbed=globbed), complete


def assigned_value(raw: str, lookup: Lookup) -> Values | None:
    """The value `NAME=raw` gives: no brace expansion, no splitting, no
    globbing; a leading `~` is expanded (kept as `~`)."""
    try:
        atoms = _atoms(raw)
        first = _first(atoms)
        if first is not None and atoms[first] == ("~", True):
            atoms.insert(first, (".", True))  # a quoted `~` is a plain name: `./~`
            atoms.insert(first + 1, ("/", True))
        expanded, complete = _substitute(atoms, lookup)
    except _Unknown:
        return None
    return tuple("".join(ch for ch, _, _ in chars) for chars in expanded), complete


def escape_glob(text: str) -> str:
    return re.sub(r"([*?[])", r"[\1]", text)


def unescape_glob(pattern: str) -> str:
    """The word bash passes on when a pattern matches nothing."""
    return re.sub(r"\[([*?[])\]", r"\1", pattern)
