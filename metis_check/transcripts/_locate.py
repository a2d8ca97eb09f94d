"""Decode a JSON document and remember the line where each value of interest starts.

API transcripts arrive as one JSON document, often pretty-printed. Rather than
guess lines from text search, the scanner walks the containers named by a
`Want` and records the exact start offset of every located value; everything
else is decoded in one `raw_decode` call. Cost stays linear in the text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import attrs

from metis_trace import InputError
from metis_trace import TranscriptFormatError
from metis_trace import raw_decode_json

_WS = re.compile(r"[ \t\n\r]*")
_NEWLINE = re.compile(r"\n")


@attrs.frozen
class Want:
    """Which parts of a value to locate: array elements, and/or some object members."""

    each: Want | None = None
    keys: Mapping[str, Want] = attrs.field(factory=dict)


LEAF = Want()


@attrs.frozen
class Located:
    """A decoded value, its 1-based start line, and its located parts (if wanted)."""

    value: Any
    line: int
    items: tuple[Located, ...] = ()
    fields: Mapping[str, Located] = attrs.field(factory=dict)

    def parts(self, key: str) -> list[tuple[Any, int]]:
        """The elements of member `key` (a list) with their lines.

        Elements the scanner did not locate inherit this value's line.
        """
        found = self.fields.get(key)
        if found is not None and found.items:
            return [(item.value, item.line) for item in found.items]
        value = self.value.get(key) if isinstance(self.value, dict) else None
        if isinstance(value, list):
            return [(v, self.line) for v in value]
        return []


def join_lines(lines: Iterable[str] | str) -> str:
    """One text from input lines, with or without their line endings."""
    if isinstance(lines, str):
        return lines
    return "\n".join(line.rstrip("\r\n") for line in lines)


class _Scanner:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def fail(self, pos: int, message: str) -> TranscriptFormatError:
        return TranscriptFormatError(self.line(pos), message, self.source)

    def skip(self, pos: int) -> int:
        match = _WS.match(self.text, pos)
        return match.end() if match else pos

    def leaf(self, pos: int) -> tuple[Any, int]:
        """Strict JSON (`metis_trace.decode_json`'s rules) from `pos`."""
        try:
            return raw_decode_json(self.text, pos, source=self.source)
        except InputError as exc:
            raise TranscriptFormatError(exc.line or 1, exc.message, self.source) from exc

    def expect(self, pos: int, char: str) -> int:
        if pos >= len(self.text) or self.text[pos] != char:
            found = repr(self.text[pos]) if pos < len(self.text) else "end of input"
            raise self.fail(pos, f"not valid JSON (expected {char!r}, found {found})")
        return self.skip(pos + 1)

    def value(self, pos: int, want: Want | None) -> tuple[Located, int]:
        line = self.line(pos)
        head = self.text[pos : pos + 1]
        if want is not None and head == "[" and want.each is not None:
            return self._array(pos, line, want.each)
        if want is not None and head == "{" and want.keys:
            return self._object(pos, line, want.keys)
        value, end = self.leaf(pos)
        return Located(value, line), end

    def _array(self, pos: int, line: int, each: Want) -> tuple[Located, int]:
        pos = self.skip(pos + 1)
        items: list[Located] = []
        if self.text[pos : pos + 1] == "]":
            return Located([], line), pos + 1
        while True:
            item, pos = self.value(pos, each)
            items.append(item)
            pos = self.skip(pos)
            if self.text[pos : pos + 1] == ",":
                pos = self.skip(pos + 1)
                continue
            self.expect(pos, "]")
            return Located([i.value for i in items], line, tuple(items)), pos + 1

    def _object(self, pos: int, line: int, keys: Mapping[str, Want]) -> tuple[Located, int]:
        pos = self.skip(pos + 1)
        value: dict[str, Any] = {}
        fields: dict[str, Located] = {}
        if self.text[pos : pos + 1] == "}":
            return Located(value, line), pos + 1
        while True:
            if self.text[pos : pos + 1] != '"':
                raise self.fail(pos, "not valid JSON (expected a member name)")
            key, end = self.leaf(pos)
            if key in value:
                raise self.fail(pos, f"duplicate key {key!r}")
            pos = self.expect(self.skip(end), ":")
            member, pos = self.value(pos, keys.get(key))
            value[key] = member.value
            fields[key] = member
            pos = self.skip(pos)
            if self.text[pos : pos + 1] == ",":
                pos = self.skip(pos + 1)
                continue
            self.expect(pos, "}")
            return Located(value, line, (), fields), pos + 1


def scan_documents(text: str, want: Want, source: str = "") -> list[Located]:
    """Every top-level JSON value in `text` (one document, or JSON Lines), located.

    Raises `TranscriptFormatError` with the line of the first malformed spot.
    """
    scanner = _Scanner(text, source)
    found: list[Located] = []
    pos = scanner.skip(0)
    while pos < len(text):
        located, pos = scanner.value(pos, want)
        found.append(located)
        pos = scanner.skip(pos)
    if not found:
        raise TranscriptFormatError(1, "empty input: no JSON value", source)
    return found
