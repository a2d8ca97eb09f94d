"""Strict JSON: the one decoder every metis reader uses.

Python's `json` accepts more than JSON and fails badly on hostile input:
`NaN` and `Infinity` decode (RFC 8259 section 6 has no such numbers), `1e999`
becomes infinity, an integer of 5,000 digits raises a bare `ValueError`, deep
nesting escapes as `RecursionError`, and a repeated key silently keeps the
last value. Here every one of those is an `InputError` naming the line and
the field. The profile follows I-JSON (RFC 7493, section 2) in refusing
duplicate member names and numbers beyond a bounded range, plus a depth
limit; unlike I-JSON it keeps lone surrogate escapes (`\\udc80`), which
the runtime writes for file names that are not UTF-8.

The fast path is the C scanner with hooks: the hooks raise on a rejected
number or a duplicate key, and a cheap count of brackets decides whether the
value needs a depth walk. Only when something is wrong does `_locate` scan
the text token by token (linear) to say where.

Pure: no I/O. The limits are a value; `JsonLimits.from_env` reads them from
a mapping the caller passes (the CLI passes `os.environ`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

import attrs

from ._errors import InputError

DEPTH_ENV = "METIS_MAX_JSON_DEPTH"
INT_ENV = "METIS_MAX_JSON_INT"


@attrs.frozen
class JsonLimits:
    """How much structure a JSON value may have.

    `max_depth`: containers nested inside each other (`[[1]]` is depth 2).
    `max_int`: the largest integer magnitude (default: the signed 64-bit range).
    """

    max_depth: int = 100
    max_int: int = 2**63 - 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> JsonLimits:
        """The limits, with `METIS_MAX_JSON_DEPTH` / `METIS_MAX_JSON_INT` applied;
        a bad value is an `InputError` naming the variable."""
        default = cls()
        return cls(
            max_depth=positive_int_setting(environ, DEPTH_ENV, default.max_depth),
            max_int=positive_int_setting(environ, INT_ENV, default.max_int),
        )


def positive_int_setting(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip().replace("_", "")
    if not text.isascii() or not text.isdigit() or len(text) > 40 or int(text) < 1:
        raise InputError(None, f"{name}={raw!r}: expected a positive integer", "environment")
    return int(text)


_limits = JsonLimits()


def set_json_limits(limits: JsonLimits) -> None:
    """Set the limits every reader uses (the CLI does this once at start)."""
    global _limits
    _limits = limits


def json_limits() -> JsonLimits:
    return _limits


class _Rejected(Exception):
    """Raised by a decoder hook; `_locate` then finds the place."""


def _reject_constant(name: str) -> Any:
    raise _Rejected(name)


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Rejected("duplicate key")
    return obj


# Integers are parsed by the C scanner itself (a Python parse_int hook would
# cost a call per number); CPython refuses more than 4,300 digits with a
# ValueError, and anything long enough to pass the limit is found by a regex
# over the text before a walk checks the values.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_object_pairs)
_SUSPECTS: dict[int, re.Pattern[str]] = {}


def _suspects(limits: JsonLimits) -> re.Pattern[str]:
    """Text that may hold a rejected value: an integer with as many digits as
    the limit, a float of 300 digits or a 3-digit exponent (1e308 is the
    largest double)."""
    pattern = _SUSPECTS.get(limits.max_int)
    if pattern is None:
        digits = len(str(limits.max_int))
        pattern = re.compile(
            rf"(?<![0-9.])[0-9]{{{digits},}}(?![.eE0-9])"
            r"|[0-9]{300}|[eE]\+?[0-9]{3}"
        )
        _SUSPECTS[limits.max_int] = pattern
    return pattern


# Above this many characters the walk itself is asked: its cost is one step a
# value, the screen's a step a character (seconds on a 50 MB tool result,
# whose one string is one value).
_SCREEN_AT_MOST = 1 << 16


def _needs_walk(text: str, start: int, end: int, limits: JsonLimits) -> bool:
    if end - start > _SCREEN_AT_MOST:
        return True
    brackets = text.count("[", start, end) + text.count("{", start, end)
    return brackets > limits.max_depth or _suspects(limits).search(text, start, end) is not None


def _walk_ok(value: Any, limits: JsonLimits) -> bool:
    """False when `value` nests too deep or holds a rejected number or string."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            if _value_problem(item, limits):
                return False
            continue
        if depth + 1 > limits.max_depth:
            return False
        if isinstance(item, dict):
            stack.extend((k, depth) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        else:
            stack.extend((v, depth + 1) for v in item)
    return True


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, stripped text) of each non-blank line of a JSONL file."""
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if text:
            yield number, text


def decode_json(
    text: str,
    *,
    line: int = 1,
    source: str = "",
    limits: JsonLimits | None = None,
) -> Any:
    """One JSON value, strictly; `line` is the line `text` starts on."""
    value, end = raw_decode_json(text, 0, line=line, source=source, limits=limits)
    if end != len(text) and _skip(text, end) != len(text):
        at = _line_at(text, _skip(text, end), line)
        raise InputError(at, "not valid JSON (extra data after the value)", source)
    return value


def raw_decode_json(
    text: str,
    pos: int,
    *,
    line: int = 1,
    source: str = "",
    limits: JsonLimits | None = None,
) -> tuple[Any, int]:
    """Decode the JSON value starting at `pos` (after any whitespace); return it
    and the offset just past it. `line` is the line of offset 0 of `text`."""
    limits = limits or _limits
    if pos < len(text) and text[pos] in " \t\n\r":
        pos = _skip(text, pos)
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        column = exc.pos - text.rfind("\n", 0, exc.pos)
        raise InputError(
            _line_at(text, exc.pos, line), f"not valid JSON ({exc.msg} at column {column})", source
        ) from exc
    except (_Rejected, RecursionError, ValueError) as exc:
        raise _problem(text, pos, limits, line, source) from exc
    if _needs_walk(text, pos, end, limits) and not _walk_ok(value, limits):
        raise _problem(text, pos, limits, line, source)
    return value, end


def check_json_value(
    value: Any, *, source: str = "", line: int | None = None, limits: JsonLimits | None = None
) -> None:
    """Apply the same limits to a value decoded by another parser (YAML):
    depth, integer range, finite floats, string keys."""
    limits = limits or _limits
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, path = stack.pop()
        problem = _value_problem(item, limits)
        if problem:
            raise InputError(line, _at(path, problem), source)
        if not isinstance(item, dict | list):
            continue
        if depth + 1 > limits.max_depth:
            raise InputError(line, _at(path, _too_deep(limits)), source)
        if isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise InputError(line, _at(path, f"key {key!r} is not text"), source)
                stack.append((member, depth + 1, _join(path, key)))
        else:
            stack.extend((member, depth + 1, f"{path}[{i}]") for i, member in enumerate(item))


def _value_problem(item: Any, limits: JsonLimits) -> str:
    if isinstance(item, str | bool) or item is None:
        return ""
    if isinstance(item, int) and abs(item) > limits.max_int:
        return f"integer beyond the limit of {limits.max_int} ({INT_ENV})"
    if isinstance(item, float) and (item != item or item in (float("inf"), float("-inf"))):
        return "NaN and Infinity are not JSON numbers"
    return ""


def _too_deep(limits: JsonLimits) -> str:
    return f"nested deeper than {limits.max_depth} levels ({DEPTH_ENV})"


# --- error path: find the first offending token, with its line and field ---

_WS = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(
    r"""[ \t\n\r]*(?:
      (?P<str>"[^"\\]*(?:\\.[^"\\]*)*")
    | (?P<num>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
    | (?P<const>NaN|-?Infinity)
    | (?P<open>[\[{])
    | (?P<close>[\]}])
    | (?P<sep>[,:])
    | (?P<lit>true|false|null)
    )""",
    re.VERBOSE,
)


class _Frame:
    __slots__ = ("index", "is_object", "key", "keys", "want_key")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.want_key = is_object
        self.key = ""
        self.index = 0
        self.keys: set[str] = set()

    def part(self) -> str:
        return self.key if self.is_object else f"[{self.index}]"


def _path(stack: list[_Frame]) -> str:
    path = ""
    for frame in stack:
        path = _join(path, frame.part()) if frame.is_object else path + frame.part()
    return path


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at(path: str, problem: str) -> str:
    if len(path) > 80:  # a deep path: its start says where it began
        path = path[:72] + "..."
    return f"{path}: {problem}" if path else problem


def _problem(text: str, pos: int, limits: JsonLimits, line: int, source: str) -> InputError:
    found = _locate(text, pos, limits)
    if found is None:  # not expected: the hooks and the walk agree with the scan
        return InputError(_line_at(text, pos, line), "not valid JSON (rejected value)", source)
    at, path, problem = found
    return InputError(_line_at(text, at, line), _at(path, problem), source)


def _locate(text: str, pos: int, limits: JsonLimits) -> tuple[int, str, str] | None:
    """The first rejected token of the value at `pos`: offset, field path, problem."""
    stack: list[_Frame] = []
    while True:
        match = _TOKEN.match(text, pos)
        if match is None or match.lastgroup is None:
            return None
        kind = match.lastgroup
        at, pos, token = match.start(kind), match.end(), match.group(kind)
        top = stack[-1] if stack else None
        if kind == "sep":
            if top is not None and token == ",":
                top.want_key = top.is_object
                top.index += 1
            continue
        if kind == "str" and top is not None and top.want_key:
            key = json.loads(token)
            top.key, top.want_key = key, False
            if key in top.keys:
                return at, _path(stack), f"duplicate key {key!r}"
            top.keys.add(key)
            continue
        if kind == "close":
            stack.pop()
            if not stack:
                return None
            continue
        problem = _token_problem(kind, token, limits)
        if problem:
            return at, _path(stack), problem
        if kind == "open":
            stack.append(_Frame(token == "{"))
            if len(stack) > limits.max_depth:
                return at, _path(stack[:-1]), _too_deep(limits)
        elif not stack:
            return None


def _token_problem(kind: str, token: str, limits: JsonLimits) -> str:
    if kind == "const":
        return f"{token} is not a JSON number"
    if kind == "num":
        is_int = not any(c in token for c in ".eE")
        if is_int and len(token.lstrip("-")) > len(str(limits.max_int)):
            return _value_problem(limits.max_int + 1, limits)
        number = int(token) if is_int else float(token)
        if number in (float("inf"), float("-inf")):
            return f"number {token[:24]} is beyond the range of a float"
        return _value_problem(number, limits)
    return ""


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    return match.end() if match else pos


def _line_at(text: str, pos: int, first: int) -> int:
    return first + text.count("\n", 0, pos)
