"""Encoded text for the credential detector: base64 candidates, the base64
forms a needle takes, percent-decoding (specs/secrets.md, "Encoded
credentials").

A base64 encoding of a text that holds a needle holds, wherever the needle
sits, one of three fixed strings: the output characters whose six bits all
come from the needle's bytes, for each of the three places a needle can start
within a 3-byte group (`base64_forms`). So whether a base64 run may hold a
credential is known without decoding it, and a screen of a JSON line can
tell too: both look for those forms.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable

_A = re.ASCII

# A base64 or base64url run: at least 16 characters of either alphabet (a
# 12-byte secret), its padding included. The same shape gitleaks looks for
# (detect/codec/base64.go); the lookbehind keeps a match at a run's start.
BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}", _A)
# Any run of base64 characters a form could sit in.
FORM_RUN = re.compile(r"[A-Za-z0-9+/_-]{4,}", _A)
PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}", _A)
_TOKEN_END = re.compile(r"""[\s"'`<>]""", _A)
_TOKEN_ENDS = " \t\n\r\f\v\"'`<>"
FORM_MIN = 4  # every form is at least this long; shorter needles are extended
_TO_URLSAFE = str.maketrans("+/", "-_")


def _fixed(needle: bytes, offset: int) -> str:
    """The base64 characters fully determined by `needle` when it starts
    `offset` bytes into a 3-byte group (whatever surrounds it)."""
    encoded = base64.b64encode(b"\0" * offset + needle + b"\0\0").decode("ascii")
    first = -(-8 * offset // 6)  # ceil: the first character whose bits all lie in the needle
    last = 8 * (offset + len(needle)) // 6
    return encoded[first:last]


def base64_forms(needle: str) -> frozenset[str]:
    """The strings one of which every base64 (or base64url) encoding of a text
    holding `needle` holds; each at least `FORM_MIN` long. A needle too short
    for that in some alignment gets no form for it (see `extended`)."""
    raw = _utf8(needle)
    forms = set()
    for offset in (0, 1, 2):
        form = _fixed(raw, offset)
        if len(form) >= FORM_MIN:
            forms.add(form)
            forms.add(form.translate(_TO_URLSAFE))
    return frozenset(forms)


def _utf8(text: str) -> bytes:
    """`text` as base64 would have encoded it: UTF-8 (an environment value
    decoded with surrogate escapes, as its original bytes)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def short_in_some_alignment(needle: str) -> bool:
    raw = _utf8(needle)
    return any(len(_fixed(raw, k)) < FORM_MIN for k in (0, 1, 2))


def extended(needle: str, follow: str) -> Iterable[str]:
    """`needle`, or (too short for a form in every alignment) `needle` and
    each character that may follow it."""
    if short_in_some_alignment(needle):
        return [needle + c for c in follow]
    return [needle]


class FormIndex:
    """A set of forms, indexed by their first `FORM_MIN` characters."""

    __slots__ = ("_by_head",)

    def __init__(self, forms: Iterable[str]) -> None:
        by_head: dict[str, list[str]] = {}
        for form in sorted(set(forms)):
            by_head.setdefault(form[:FORM_MIN], []).append(form)
        self._by_head = {k: tuple(v) for k, v in by_head.items()}

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_head.values())

    def forms(self) -> tuple[str, ...]:
        return tuple(f for v in self._by_head.values() for f in v)

    def within(self, run: str) -> bool:
        """Whether a form sits in `run` (a string of base64 characters)."""
        heads = self._by_head
        for i in range(len(run) - FORM_MIN + 1):
            candidates = heads.get(run[i : i + FORM_MIN])
            if candidates is not None and any(run.startswith(f, i) for f in candidates):
                return True
        return False

    def anywhere(self, text: str) -> bool:
        """Whether a form sits anywhere in `text`."""
        return any(self.within(m.group()) for m in FORM_RUN.finditer(text))


_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def decode_base64(run: str) -> str | None:
    """The text a base64 or base64url run encodes, as latin-1 (a character
    per byte, so every rule sees them); None if it is neither (or mixes both
    alphabets: a path like `a/b_c`), or encodes binary data (an image, a
    hash, a signature: more than a quarter of its bytes outside printable
    ASCII), where no credential is written."""
    body = run.rstrip("=")
    std = "+" in body or "/" in body
    url = "-" in body or "_" in body
    if std and url:
        return None
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded) if url else base64.b64decode(padded)
    except (binascii.Error, ValueError):
        return None
    if 4 * len(raw.translate(None, _TEXT_BYTES)) > len(raw):
        return None
    return raw.decode("latin-1")


def percent_tokens(text: str) -> Iterable[tuple[int, int]]:
    """The spans of the tokens (a URL, a query, a form body: up to
    whitespace, a quote or an angle bracket) that hold a percent-escape. Only
    these are decoded, so a long text with one `%20` is not scanned twice.
    Linear: each token is delimited once."""
    pos = 0
    for m in PERCENT_ESCAPE.finditer(text):
        if m.start() < pos:
            continue
        start = max(pos, *(text.rfind(c, pos, m.start()) + 1 for c in _TOKEN_ENDS))
        stop = _TOKEN_END.search(text, m.end())
        pos = stop.start() if stop is not None else len(text)
        yield start, pos


def unpercent(text: str) -> tuple[str, list[int]] | None:
    """`text` with its `%XX` escapes decoded (RFC 3986 section 2.1), and for
    each decoded position the original one (plus the end); None if none."""
    out: list[str] = []
    where: list[int] = []
    pos = 0
    for m in PERCENT_ESCAPE.finditer(text):
        out.append(text[pos : m.start()])
        where.extend(range(pos, m.start()))
        out.append(chr(int(text[m.start() + 1 : m.end()], 16)))
        where.append(m.start())
        pos = m.end()
    if not where and pos == 0:
        return None
    out.append(text[pos:])
    where.extend(range(pos, len(text) + 1))
    return "".join(out), where
