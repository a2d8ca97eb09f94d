"""Finding: the scanner that runs the rules over a text and its views.

`CredentialScanner.find` runs each rule whose needles a text holds (and
looks for its literal values) over the text and its views with escapes
decoded (`_escapes.py`), and over what its percent-escapes and plausible
base64 runs decode to (`_encoded.py`), `ENCODING_DEPTH` encodings deep;
each finding is mapped back to its span in the text, and overlapping spans
are joined. `find_credentials` and `redact_credentials` use one scanner
without literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Sequence

import ahocorasick_rs

from .._encodings import BASE64_RUN
from .._encodings import FormIndex
from .._encodings import decode_base64
from .._encodings import percent_tokens
from .._encodings import unpercent
from ._encoded import ENCODED_FORMS
from ._encoded import literal_forms
from ._escapes import _views
from ._families import CredentialFinding
from ._rules import _RULES
from ._screen import may_hold_credential

# How many encodings deep `find` decodes (an encoding inside another: a URL
# with percent-escapes in a base64 blob, a base64 value in a URL's query,
# base64 in base64); which runs are decoded, `_encoded.py`.
ENCODING_DEPTH = 2


def _raw_findings(text: str, literals: re.Pattern[str] | None) -> list[CredentialFinding]:
    present = _present_needles(text)
    found: list[CredentialFinding] = []
    for rule in _RULES:
        if present.isdisjoint(rule.needles):
            continue
        for start, end in rule.scan(text):
            found.append(CredentialFinding(rule.family, start, end))
    if literals is not None:
        for m in literals.finditer(text):
            found.append(CredentialFinding("environment-value", m.start(), m.end()))
    return found


_RULE_NEEDLES = tuple(dict.fromkeys(n for r in _RULES for n in r.needles))
_NEEDLE_SCAN = ahocorasick_rs.AhoCorasick(
    list(_RULE_NEEDLES), implementation=ahocorasick_rs.Implementation.DFA
)
_SHORT_TEXT = 4096


def _present_needles(text: str) -> frozenset[str]:
    """The rules' needles `text` holds (lowercase): one Aho-Corasick scan,
    where a `needle in text.lower()` for each of ~60 took seconds on a 50 MB
    text; a short text is asked the plain way (no automaton call to set up)."""
    low = text.lower()
    if len(text) <= _SHORT_TEXT:
        return frozenset(n for n in _RULE_NEEDLES if n in low)
    hits = _NEEDLE_SCAN.find_matches_as_indexes(low, overlapping=True)
    return frozenset(_RULE_NEEDLES[i] for i, _, _ in hits)


def _merge(found: list[CredentialFinding]) -> list[CredentialFinding]:
    """Sorted, and overlapping spans joined (the first one's family kept)."""
    found.sort(key=lambda f: (f.start, -f.end))
    merged: list[CredentialFinding] = []
    for f in found:
        if f.start >= f.end:
            continue
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            if f.end > last.end:
                merged[-1] = CredentialFinding(last.family, last.start, f.end)
            continue
        merged.append(f)
    return merged


class CredentialScanner:
    """The rules, plus optional literal values (a run's secret environment
    values) found as family `environment-value`, escaped or encoded or not.

    `find(text)` is `find_credentials` with the literals; `may_hold(json_text)`
    is a fast screen of a JSON text (see `may_hold_credential`)."""

    __slots__ = ("_forms", "_literal_needles", "_literals")

    def __init__(self, literals: Sequence[str] = ()) -> None:
        values = sorted({v for v in literals if v}, key=len, reverse=True)
        self._literals = re.compile("|".join(map(re.escape, values))) if values else None
        self._literal_needles = tuple(_json_forms(values))
        self._forms = (
            FormIndex([*ENCODED_FORMS.forms(), *literal_forms(values)]) if values else ENCODED_FORMS
        )

    def find(self, text: str) -> list[CredentialFinding]:
        return _merge(self._find(text, ENCODING_DEPTH))

    def _find(self, text: str, depth: int) -> list[CredentialFinding]:
        found = []
        for view, where in _views(text):
            inner = _raw_findings(view, self._literals)
            if depth:
                inner.extend(self._encoded(view, depth))
            for f in inner:
                # The position after a decoded span is where its last escape ends.
                found.append(CredentialFinding(f.family, where[f.start], where[f.end]))
        return found

    def _encoded(self, text: str, depth: int) -> list[CredentialFinding]:
        """What `text`'s percent-escapes and plausible base64 runs decode to
        holds (`depth - 1` encodings deeper): each base64 run that holds a
        credential is a finding whole."""
        found = []
        if "%" in text:
            for at, stop in percent_tokens(text):
                decoded = unpercent(text[at:stop])
                if decoded is None:
                    continue
                view, where = decoded
                for f in self._find(view, depth - 1):
                    found.append(
                        CredentialFinding(f.family, at + where[f.start], at + where[f.end])
                    )
        for m in BASE64_RUN.finditer(text):
            # Decoding is cheap (C); looking for forms is not: binary first.
            plain = decode_base64(m.group())
            if plain is None or not self._forms.within(m.group()):
                continue  # only a text run holding a needle's form is scanned
            inner = self._find(plain, depth - 1)
            if inner:
                found.append(CredentialFinding(min(inner, key=_by_start).family, *m.span()))
        return found

    def may_hold(self, json_text: str) -> bool:
        return (
            may_hold_credential(json_text)
            or any(v in json_text for v in self._literal_needles)
            or (self._forms is not ENCODED_FORMS and self._forms.anywhere(json_text))
        )


def _by_start(f: CredentialFinding) -> int:
    return f.start


def _json_forms(values: Sequence[str]) -> Iterable[str]:
    """Each value as a JSON encoder may write it inside a string: plain ASCII
    or with `\\uXXXX` escapes (both cases of hex digits); values holding a
    quote, backslash or control character are left to the backslash screen."""
    for v in values:
        ascii_form = "".join(c if 0x20 <= ord(c) < 0x7F else f"\\u{ord(c):04x}" for c in v)
        yield ascii_form
        if ascii_form != v:
            yield v
            yield "".join(c if 0x20 <= ord(c) < 0x7F else f"\\u{ord(c):04X}" for c in v)


_DEFAULT = CredentialScanner()


def find_credentials(text: str) -> list[CredentialFinding]:
    """The credentials in `text`: non-overlapping spans, sorted by start."""
    return _DEFAULT.find(text)


def redact_credentials(text: str, replacement: str = "[REDACTED]") -> str:
    """`text` with every credential replaced by `replacement`."""
    return replace_spans(text, find_credentials(text), replacement)


def replace_spans(text: str, found: Sequence[CredentialFinding], replacement: str) -> str:
    if not found:
        return text
    parts: list[str] = []
    pos = 0
    for f in found:
        parts.append(text[pos : f.start])
        parts.append(replacement)
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)
