"""Hypothesis strategies: real files, damaged.

Seeds are real inputs (the corpora in `../shared/corpora/`, `tests/data/`, the
shipped scenarios, traces the runtime wrote); a drawn example applies one to
four mutations: byte-level (flip, delete, truncate, duplicate or swap lines,
insert a hostile token) and structure-level (parse a JSON line or document,
replace a value at a random path with a value of a wrong type, a NaN, a huge
integer, deep nesting, a repeated key).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

# Tokens that broke readers before, or that sit on a parser's edge.
HOSTILE: tuple[bytes, ...] = (
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"9" * 5000,
    b"18446744073709551616",
    b"[" * 5000,
    b"{" * 300,
    b'"',
    b"\\",
    b"\x00",
    b"\xff\xfe",
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b"\xef\xbb\xbf",
    b"\n",
    b"\r\n",
    b"\r",
    b"\xe2\x80\xa8",  # U+2028: a line break to str.splitlines, not to JSON
    b",",
    b":",
    b'"seq":"2",',
    b'"t":NaN,',
    b'"kind":"header",',
    b"true",
    b"null",
    b"\\ud800",
    b".nan",
    b".inf",
    b"!!set",
    b"&a [*a]",
    b"2024-01-01",
    b"? [k]\n: v\n",
    b"<<: {}",
)

# Values of the wrong type (or out of range) for whatever field they replace.
WRONG: tuple[Any, ...] = (
    "2",
    True,
    False,
    None,
    1.5,
    -1,
    0,
    2**64,
    "",
    [],
    {},
    [[[[[]]]]],
    {"kind": "header"},
    "x" * 300,
)
_SPECIAL_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e999", "9" * 400)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:20]):
            found += _paths(item, (*prefix, i))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


@st.composite
def _json_mutation(draw: st.DrawFn, text: str) -> str | None:
    """One JSON value of `text` (a line or the whole document) changed at a
    random path; None when `text` is not JSON."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    paths = _paths(value)
    path = paths[draw(st.integers(0, len(paths) - 1))]
    how = draw(st.sampled_from(["wrong", "special", "duplicate", "deep"]))
    if how == "wrong":
        return json.dumps(_replace(value, path, draw(st.sampled_from(WRONG))))
    marker = "\u0000MARK\u0000"
    dumped = json.dumps(_replace(value, path, marker))
    token = json.dumps(marker)
    if how == "special":
        return dumped.replace(token, draw(st.sampled_from(_SPECIAL_NUMBERS)), 1)
    if how == "deep":
        depth = draw(st.integers(90, 3000))
        return dumped.replace(token, "[" * depth + "]" * depth, 1)
    if isinstance(value, dict) and value and not path:  # a repeated key at the top
        key = next(iter(value))
        return dumped.replace("{", "{" + json.dumps(key) + ": 0, ", 1)
    return dumped.replace(token, '{"k": 1, "k": 2}', 1)


@st.composite
def mutated(draw: st.DrawFn, seeds: Sequence[bytes], structured: bool = True) -> bytes:
    """A seed with one to four mutations."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        ops = ["flip", "delete", "insert", "truncate", "dup_line", "swap_lines"]
        op = draw(st.sampled_from([*ops, "json", "json"] if structured else ops))
        size = len(data)
        at = draw(st.integers(0, size)) if size else 0
        if op == "flip" and size:
            data[min(at, size - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete" and size:
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(HOSTILE))
        elif op == "truncate":
            del data[at:]
        elif op in ("dup_line", "swap_lines", "json"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(j, lines[i])
            elif op == "swap_lines":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                whole = bytes(data).decode("utf-8", "replace")
                target = whole if draw(st.booleans()) or len(lines) == 1 else None
                if target is not None:
                    changed = draw(_json_mutation(target))
                    if changed is not None:
                        data = bytearray(changed.encode("utf-8", "surrogatepass"))
                    continue
                line = lines[i].decode("utf-8", "replace")
                changed = draw(_json_mutation(line))
                if changed is not None:
                    lines[i] = changed.encode("utf-8", "surrogatepass")
            data = bytearray(b"\n".join(lines))
    return bytes(data)
