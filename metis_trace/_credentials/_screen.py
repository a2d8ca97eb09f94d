"""The screen: whether a JSON text may hold a credential at all.

`may_hold_credential` is the fast test a trace or journal line passes
before the slow path (`find_credentials` on each of its strings); the
runtime's redactor computes the same from `SCREEN_NEEDLES` and the encoded
forms (`encoded_screen`) with one Aho-Corasick scan.
"""

from __future__ import annotations

from .._encodings import PERCENT_ESCAPE
from ._encoded import ENCODED_FORMS
from ._names import _NAME_WORDS_PLAIN
from ._rules import _RULES

# `secret-assignment` is screened by the last word of its name and what
# follows it as JSON writes it (its own needles, `key` above all, are in most
# lines): every name `_NAME_END` matches ends with one of these words, then
# comes an optional quote, blanks and `:` or `=` (`_ASSIGN`), which JSON
# writes as `\"`, `'`, `` ` ``, ` `, `\t`, `:` or `=`; a string under a
# secret-named dict key is `word":"` (compact) or `word": "`.
_NAME_WORDS = _NAME_WORDS_PLAIN
_AFTER_NAME = ('":"', '": "', '\\"', "'", "`", " ", "\\t", ":", "=")

RULE_NEEDLES: tuple[str, ...] = tuple(
    dict.fromkeys(n for r in _RULES if r.family != "secret-assignment" for n in r.needles)
)
NAME_WORDS = _NAME_WORDS

# Every needle, lowercase: the rules' (but `secret-assignment`'s) and the
# assignment ones. None holds a quote, backslash or control character unless
# as JSON writes it, so each is a substring of any JSON encoding of a text
# that holds what it stands for.
SCREEN_NEEDLES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *RULE_NEEDLES,
            *(word + after for word in _NAME_WORDS for after in _AFTER_NAME),
        ]
    )
)


def may_hold_credential(json_text: str) -> bool:
    """Whether a JSON text (a trace or journal line) may hold a credential in
    any of its strings, or a string value under a secret-named key: whether
    its lowercase form holds a needle (`SCREEN_NEEDLES`), or it holds a
    literal backslash (`\\\\` in the JSON: an escape may hide a credential).
    Never a false negative, for JSON written by the stdlib or pydantic-core
    encoders; false positives only cost the slow path (`find_credentials` on
    each string).

    The definition; the runtime's redactor computes the same with one
    Aho-Corasick scan (a test checks that they agree)."""
    if "\\\\" in json_text:
        return True
    low = json_text.lower()
    if any(needle in low for needle in SCREEN_NEEDLES):
        return True
    # Encoded: a percent-escape, or a base64 form of a needle (`ENCODED_FORMS`).
    return PERCENT_ESCAPE.search(json_text) is not None or ENCODED_FORMS.anywhere(json_text)
