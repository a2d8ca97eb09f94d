"""Encoded credentials: which base64 runs are worth decoding.

A base64 run is decoded only if it holds a base64 form of one of the
needles (`ENCODED_FORMS`, built once, here); what it decodes to is scanned
like any text (`_scanner.py`). `encoded_screen` and `literal_forms` give the
same forms to a screen that looks for all of them at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence

from .._encodings import FormIndex
from .._encodings import base64_forms
from .._encodings import extended
from .._encodings import short_in_some_alignment
from ._names import _NAME_WORDS_PLAIN
from ._rules import _GITLAB_PREFIXES

# A base64 run is decoded only if it holds a form of one of these needles
# (`base64_forms`): the rules' needles in the case they are written in, the
# names of secret fields in three cases followed by what comes after a name.
# What it decodes to is scanned like any text, `ENCODING_DEPTH` encodings
# deep (`_scanner.py`).
_FOLLOW = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%"
_ENCODED_PREFIXES = (
    *("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "AIza", "github_pat_", "GR1348941"),
    *(f"gh{c}_" for c in "pousr"),
    *(f"gl{p}-" for p in _GITLAB_PREFIXES),
    *(f"xox{c}" for c in "abposre"),
    *("xapp-", "hooks.slack.com", "_live_", "_test_", "_prod_", "whsec_"),
    *("sk-", "gsk_", "hf_", "xai-", "pplx-", "r8_", "eyJ", "PRIVATE KEY", "://"),
    *(f"{d}Q~" for d in "0123456789"),
    *("AccountKey=", "accountkey=", "sig=", "T3BlbkFJ"),
)
_ENCODED_WORDS = ("authorization", "bearer ", "aws_", "aws ", *_NAME_WORDS_PLAIN)
_AFTER_NAME_PLAIN = ('"', "'", "`", " ", "\t", ":", "=")


def _cases(word: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((word, word.upper(), word.capitalize())))


def _percent_forms(needle: str) -> tuple[str, ...]:
    """`needle` with its reserved characters percent-encoded, as a URL's
    query or a form body has it inside a base64 blob (upper- and lowercase
    hex, a space also as `+`); empty if it has none."""
    upper = "".join(c if c.isalnum() or c in "-_.~" else f"%{ord(c):02X}" for c in needle)
    if upper == needle:
        return ()
    lower = "".join(c if c.isalnum() or c in "-_.~" else f"%{ord(c):02x}" for c in needle)
    plus = "".join(
        "+" if c == " " else c if c.isalnum() or c in "-_.~" else f"%{ord(c):02X}" for c in needle
    )
    return tuple(dict.fromkeys((upper, lower, plus)))


_PLAIN_ENCODED_NEEDLES = (
    *_ENCODED_PREFIXES,
    *(c for w in _ENCODED_WORDS[:4] for c in _cases(w)),
    *(c + a for w in _ENCODED_WORDS[4:] for c in _cases(w) for a in _AFTER_NAME_PLAIN),
)
ENCODED_NEEDLES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(n for p in _PLAIN_ENCODED_NEEDLES for n in extended(p, _FOLLOW)),
            *(q for p in _PLAIN_ENCODED_NEEDLES for q in _percent_forms(p)),
        ]
    )
)
# Base64 inside base64: the forms of the forms of the needles that need no
# extension (the short ones, `sk-`, `hf_`, `r8_`, `eyJ`, `://`, `Q~`, `A3T`,
# would multiply the forms by 66 once more).
_NESTED_NEEDLES = (
    *(p for p in _ENCODED_PREFIXES if not short_in_some_alignment(p)),
    *("sk-ant-", "sk-proj-", "sk-svcacct-", "sk-admin-", "Bearer "),
    # The three-letter last words of names, with what follows a name (`apiKey":`).
    *(
        c + a
        for w in ("key", "pwd", "pat", "dsn", "url", "uri")
        for c in _cases(w)
        for a in _AFTER_NAME_PLAIN
    ),
    *(c for w in _ENCODED_WORDS if len(w) >= 4 for c in _cases(w.strip())),
)
ENCODED_FORMS = FormIndex(
    [
        *(f for n in ENCODED_NEEDLES for f in base64_forms(n)),
        *(g for n in _NESTED_NEEDLES for f in base64_forms(n) for g in base64_forms(f)),
    ]
)


def encoded_screen(literals: Sequence[str] = ()) -> tuple[str, ...]:
    """Every base64 form the screen looks for (`ENCODED_FORMS`, and those of
    `literals`): for a screen that scans for them at once."""
    return (*ENCODED_FORMS.forms(), *literal_forms(literals))


def literal_forms(values: Iterable[str]) -> list[str]:
    """The base64 forms of literal values (at least `MIN_SECRET_LEN` long:
    every alignment has one), and the forms of those (base64 in base64)."""
    single = [f for v in values for f in base64_forms(v)]
    return [*single, *(g for f in single for g in base64_forms(f))]
