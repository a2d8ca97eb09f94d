"""Credential redaction for everything the runtime writes to disk.

Redacted: `sk-...` API keys, GitHub tokens (`ghp_...`, `gho_`, `ghs_`, `ghu_`,
`ghr_`, `github_pat_...`), `Bearer ...` credentials, `NAME=value` where NAME
ends in `_KEY`, `_TOKEN` or `_SECRET` (any case), and the literal values of
such environment variables present when the redactor was built. Values
shorter than `MIN_SECRET_LEN` are not redacted by value: they would hit
ordinary text (they are still caught by the patterns above).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 6

_SECRET_NAME = re.compile(r"(?i)[A-Z0-9_]*_(?:KEY|TOKEN|SECRET)")
_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}",
    r"\b(?:gh[posur]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})",
    r"(?<=\bBearer )[A-Za-z0-9._~+/=\-]+",
    # NAME=value: keep the name (useful when reading a trace), drop the value.
    r"(?i:(?<=_KEY=)|(?<=_TOKEN=)|(?<=_SECRET=))(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)",
)

# What each pattern needs in the text, as substrings of its JSON encoding: the
# first three patterns are case-sensitive; the NAME= one is not, and every
# match of it holds a `=` (JSON escapes none of these characters).
_GITHUB = ("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_")
_NAME_ENDS = ("_key=", "_token=", "_secret=")


def _stdlib_escaped(value: str) -> str:
    return json.dumps(value, ensure_ascii=True)[1:-1]


def _fast_escaped(value: str) -> str | None:
    """`value` as it appears inside a string written by pydantic-core: as
    `_fast_json` writes it, and as plain `to_json` does when that is ASCII.
    None if it cannot write it (nor then a line holding it: such a line
    comes from the stdlib encoder)."""
    data = _fast_json(value)
    return data[1:-1].decode("ascii") if data is not None else None


# Built once: json.dumps with non-default options builds an encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


def _supports_ensure_ascii() -> bool:
    try:
        return to_json("\u2028", ensure_ascii=True) == b'"\\u2028"'
    except TypeError:  # pydantic-core older than `ensure_ascii`
        return False


_ASCII_ESCAPES = _supports_ensure_ascii()


def _fast_json(obj: Any) -> bytes | None:
    """`obj` as compact ASCII JSON by pydantic-core, or None where the stdlib
    encoder must write it: a lone surrogate, a type neither knows (the stdlib
    then raises its TypeError), or non-ASCII text with an old pydantic-core."""
    try:
        if _ASCII_ESCAPES:
            return to_json(obj, ensure_ascii=True, by_alias=False)
        data = to_json(obj, by_alias=False)
    except PydanticSerializationError:
        return None
    return data if data.isascii() else None


class Redactor:
    """Replaces credentials in strings with `[REDACTED]`.

    Built once per run (the environment is read at construction); `text` and
    `value` are pure afterwards. Strings without a candidate are returned
    unchanged at the cost of one regex scan.
    """

    __slots__ = ("_escaped", "_fast_escaped", "_re")

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        values = sorted(
            {v for k, v in env.items() if _SECRET_NAME.fullmatch(k) and len(v) >= MIN_SECRET_LEN},
            key=len,
            reverse=True,  # longest first, so a value containing another wins
        )
        parts = [*(re.escape(v) for v in values), *_PATTERNS]
        self._re = re.compile("|".join(f"(?:{p})" for p in parts))
        # Each value as it appears inside a JSON string written by the stdlib
        # encoder, and by the fast one (they differ: e.g. U+007F).
        self._escaped = tuple(_stdlib_escaped(v) for v in values)
        self._fast_escaped = tuple(e for v in values if (e := _fast_escaped(v)) is not None)

    def json_line(self, obj: Any) -> str:
        """`obj` as one line of ASCII JSON, with credentials redacted. ASCII:
        U+2028, U+0085 and the like would end the line for some JSONL readers.

        What pydantic-core serializes (models, enums, tuples, ...) is written
        as it does: a model as `model_dump(mode="json")`, and redacted so."""
        return self.json_bytes(obj).decode("ascii")

    def json_bytes(self, obj: Any) -> bytes:
        """`json_line(obj)`, ASCII-encoded (what a file write needs).

        pydantic-core writes it, several times faster than the stdlib encoder
        on small dicts: plain when that is ASCII (most lines), else with
        ASCII escapes; the stdlib encoder writes what it cannot (a lone
        surrogate; a type neither knows, for the stdlib's TypeError)."""
        try:
            data = to_json(obj, by_alias=False)
        except PydanticSerializationError:
            data = None
        if data is not None and data.isascii():
            if not _screen(data.decode("ascii"), self._fast_escaped):
                return data
        else:
            data = _fast_json(obj)
            if data is None:
                line = _ENCODE(obj)
                if not _screen(line, self._escaped):
                    return line.encode("ascii")
            elif not _screen(data.decode("ascii"), self._fast_escaped):
                return data
        # rare: only then walk the strings
        clean = self.value(to_jsonable_python(obj, by_alias=False) if _has_model(obj) else obj)
        data = _fast_json(clean)
        return data if data is not None else _ENCODE(clean).encode("ascii")

    def text(self, s: str) -> str:
        return self._re.sub(REDACTED, s)

    def value(self, obj: Any) -> Any:
        """`obj` (JSON-like: dicts, lists, tuples, strings, scalars) with every
        string redacted; dict keys included. Non-string leaves are kept."""
        if isinstance(obj, str):
            return self._re.sub(REDACTED, obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj


def _screen(line: str, escaped: tuple[str, ...]) -> bool:
    """Whether a JSON text may hold a credential: literal substring tests,
    each behind a one-character test (memchr) where that helps; much faster
    than any regex scan. Never a false negative; false positives are fine."""
    if "-" in line and "sk-" in line:
        return True
    if "gh" in line:
        for needle in _GITHUB:  # plain loops: a generator per `any` costs more
            if needle in line:
                return True
    if "B" in line and "Bearer " in line:
        return True
    if "=" in line:
        if "\\u" in line:
            return True  # an escape: case-blind `_KEY` also matches e.g. U+212A
        low = line.lower()
        for needle in _NAME_ENDS:
            if needle in low:
                return True
    return bool(escaped) and any(value in line for value in escaped)


def _has_model(obj: Any) -> bool:
    """Whether a pydantic model sits anywhere in `obj` (`value` walks only
    dicts, lists and tuples)."""
    if isinstance(obj, BaseModel):
        return True
    if isinstance(obj, dict):
        return any(_has_model(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return any(_has_model(v) for v in obj)
    return False
