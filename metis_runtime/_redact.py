"""Credential redaction for everything metis writes (specs/secrets.md).

What is a credential is the shared detector's business
(`metis_trace.find_credentials`: cloud, VCS, chat, payment and
model-provider keys, private key blocks, JWTs, Authorization headers,
basic-auth URLs, secret-named fields and variables, escaped or not). On top
of it the redactor adds the literal values of the secret-named environment
variables present when it was built (`secret_name`: `*_KEY`, `*_TOKEN`,
`*_SECRET`, `*_PASSWORD`, `*_CREDENTIALS`, `DATABASE_URL`, ...), and in JSON
values the whole string under a secret-named key (`{"password": "..."}`).
Values shorter than `MIN_SECRET_LEN` are not redacted by value: they would
hit ordinary text (they are still caught by the rules). Path and settings
variables of published lists (POSIX XBD chapter 8: `PWD`, `OLDPWD`, `HOME`,
`PATH`, ...; XDG base directories; GitHub Actions' defaults) are never
secrets: `metis_trace._plain_variables` names them and its sources.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import ahocorasick_rs
from attrs import frozen
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from pydantic_core import to_json
from pydantic_core import to_jsonable_python

from metis_trace import SCREEN_NEEDLES
from metis_trace import CredentialFinding
from metis_trace import CredentialScanner
from metis_trace import encoded_screen
from metis_trace import replace_spans
from metis_trace import secret_name
from metis_trace import secret_values

REDACTED = "[REDACTED]"


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

    Built once per run (the environment is read at construction); the
    methods are pure afterwards. Strings without a candidate cost one screen
    (an Aho-Corasick scan of the JSON line for `json_bytes`).
    """

    __slots__ = ("_encoded", "_escaped", "_fast_escaped", "_scanner", "_values")

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._values = secret_values(os.environ if environ is None else environ)
        self._scanner = CredentialScanner(self._values)
        # Each value as it appears inside a JSON string written by the stdlib
        # encoder, and by the fast one (they differ: e.g. U+007F).
        self._escaped = tuple(_stdlib_escaped(v).encode("ascii") for v in self._values)
        self._fast_escaped = tuple(
            e.encode("ascii") for v in self._values if (e := _fast_escaped(v)) is not None
        )
        # The base64 forms of the rules' needles and of these values, in one automaton.
        self._encoded = _ENCODED if not self._values else _screen_for(self._values)

    @property
    def values(self) -> tuple[str, ...]:
        """The environment values redacted by value (longest first)."""
        return self._values

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
            if not _screen(data, self._fast_escaped, self._encoded):
                return data
        else:
            data = _fast_json(obj)
            if data is None:
                line = _ENCODE(obj).encode("ascii")
                if not _screen(line, self._escaped, self._encoded):
                    return line
            elif not _screen(data, self._fast_escaped, self._encoded):
                return data
        # rare: only then walk the strings
        clean = self.value(to_jsonable_python(obj, by_alias=False) if _has_model(obj) else obj)
        data = _fast_json(clean)
        return data if data is not None else _ENCODE(clean).encode("ascii")

    def find(self, s: str) -> list[CredentialFinding]:
        """The credentials in `s`, the environment's values included."""
        return self._scanner.find(s)

    def text(self, s: str) -> str:
        return replace_spans(s, self._scanner.find(s), REDACTED)

    def value(self, obj: Any) -> Any:
        """`obj` (JSON-like: dicts, lists, tuples, strings, scalars) with every
        string redacted, dict keys included, and the whole string under a
        secret-named key (`password`, `API_KEY`, ...). Other leaves are kept."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if isinstance(v, str) and v and isinstance(k, str) and secret_name(k):
                    out[self.text(k)] = REDACTED
                else:
                    out[self.value(k)] = self.value(v)
            return out
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj

    def cut(self, s: str, limit: int) -> str:
        """`s[:limit]`, redacted before it is cut: a cut never leaves part of
        a credential (the text is redacted, then cut)."""
        return self.text(s)[:limit]

    def head(self, s: str, limit: int) -> str:
        """`s[:limit]`, or less: never part of a credential (unredacted: for
        text a model reads, whose copy on disk the writers redact)."""
        for f in self._scanner.find(s):
            if f.start < limit < f.end:
                return s[: f.start]
        return s[:limit]

    def tail(self, s: str, start: int) -> str:
        """`s[start:]`, or less: never part of a credential (see `head`)."""
        for f in self._scanner.find(s):
            if f.start < start < f.end:
                start = f.end
        return s[start:]


# One Aho-Corasick automaton for every needle of the screen: one scan of the
# line, where the definition (`may_hold_credential`) loops over them. The
# base64 forms are case-sensitive (`encoded_screen`): the first scan, of the
# lowercase line, holds them lowercased too, so a line that holds neither a
# needle nor a form costs one scan; one that holds either is checked again
# with the exact automata.
_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(
    [n.encode("ascii") for n in SCREEN_NEEDLES],
    implementation=ahocorasick_rs.Implementation.DFA,
)


@frozen
class _Screen:
    first: ahocorasick_rs.BytesAhoCorasick  # needles and lowercased forms
    forms: ahocorasick_rs.BytesAhoCorasick  # the forms, exact


def _screen_for(literals: Sequence[str] = ()) -> _Screen:
    forms = [f.encode("ascii") for f in encoded_screen(literals) if f.isascii()]
    return _Screen(
        ahocorasick_rs.BytesAhoCorasick(
            list(
                dict.fromkeys(
                    [*(n.encode("ascii") for n in SCREEN_NEEDLES), *(f.lower() for f in forms)]
                )
            ),
            implementation=ahocorasick_rs.Implementation.DFA,
        ),
        ahocorasick_rs.BytesAhoCorasick(forms, implementation=ahocorasick_rs.Implementation.DFA),
    )


_ENCODED = _screen_for()


def _screen(line: bytes, escaped: Sequence[bytes], encoded: _Screen = _ENCODED) -> bool:
    """`may_hold_credential(line)`, or one of the environment's values in
    `line` as the encoder escapes it or in base64. Never a false negative;
    false positives only cost the slow path."""
    if b"\\" in line and b"\\\\" in line:  # one byte first: memchr, much faster
        return True
    if encoded.first.find_matches_as_indexes(line.lower()) and (
        _AUTOMATON.find_matches_as_indexes(line.lower())
        or encoded.forms.find_matches_as_indexes(line)
    ):
        return True
    if b"%" in line and _PERCENT_ESCAPE.search(line) is not None:
        return True
    return bool(escaped) and any(value in line for value in escaped)


_PERCENT_ESCAPE = re.compile(rb"%[0-9A-Fa-f]{2}")


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
