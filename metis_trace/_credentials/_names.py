"""The names of secret fields and variables, and the value given to one.

`secret_name` says whether a field or variable of a name holds a secret,
`secret_values` picks the values of an environment's secret-named
variables; `_assignments` is the `secret-assignment` rule's scan (the value
given to a secret-named field or variable, in JSON, YAML, env, ini and code
form), tried only where a name can start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping

import ahocorasick_rs

from .._plain_variables import PLAIN_VARIABLES

_AI = re.ASCII | re.IGNORECASE


# A secret-named field or variable: its name ends with one of these words. The
# bare `key`, `pass`, `pat` and `dsn` count only as the last part of a longer
# name (`MY_KEY`, `db.pass`), since alone they are common words; likewise the
# URL names of the usual connection-string variables.
_NAME_END = (
    r"(?:pass(?:word|wd|phrase)|pwd|secret|token|credentials?|api[_-]?key|apikey"
    r"|(?:access|secret|private|client|auth|master|encryption|signing|account|app"
    r"|service|session|license)[_-]?key"
    r"|[_.-](?:key|pass|pat|dsn)"
    r"|(?:database|db|redis|mongo(?:db)?|postgres(?:ql)?|pg|mysql|mariadb|amqp|rabbitmq"
    r"|broker|sentry|elastic(?:search)?|kafka|nats|mqtt|ftp|smtp|ldap)[_.-]?(?:url|uri|dsn)"
    r"|connection[_-]?string)"
)
# The last words of secret names (the screens' and the encoded forms' view of them).
_NAME_WORDS_PLAIN = (
    *("password", "passwd", "passphrase", "pass", "pwd", "secret", "token"),
    *("credential", "credentials", "key", "pat", "dsn", "url", "uri", "string"),
)
_SECRET_NAME = re.compile(rf"[a-z0-9_.-]*{_NAME_END}", _AI)


def secret_name(name: str) -> bool:
    """Whether a field or variable of this name holds a secret (its value is
    redacted whole): `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`,
    `*_CREDENTIALS`, `api_key`, `password`, `DATABASE_URL`, ... (any case),
    but the published path and settings variables (`PWD`, `OLDPWD`, ...:
    `PLAIN_VARIABLES`, exact upper-case names)."""
    return _SECRET_NAME.fullmatch(name) is not None and name not in PLAIN_VARIABLES


MIN_SECRET_LEN = 6


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the secret-named variables of `environ`, at least
    `MIN_SECRET_LEN` long (shorter ones would hit ordinary text), longest
    first (so a value that holds another wins)."""
    values = {v for k, v in environ.items() if secret_name(k) and len(v) >= MIN_SECRET_LEN}
    return tuple(sorted(values, key=len, reverse=True))


# --- the value given to a secret name ------------------------------------------

# A value given to a name: quoted (the span is inside the quotes) or bare (up
# to whitespace, a quote or a bracket). References (`$PASSWORD`) and calls
# (`token = get_token()`) are redacted too: a redactor errs on the safe side.
_ASSIGN = r"""(?![a-z0-9])["'`]?[ \t]*(?:[:=]|:=|=>)[ \t]*"""
_VALUE = (
    r"""(?:"((?:[^"\\\r\n]|\\.)+)"|'([^'\r\n]+)'|`([^`\r\n]+)`"""
    r"""|([^\s"'`,;()\[\]{}<>]+))"""
)
_ASSIGNMENT = re.compile("(" + _NAME_END + ")" + _ASSIGN + _VALUE, _AI)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _assigned_name(text: str, start: int, end: int) -> str:
    """The whole name whose last word the assignment matched at `start:end`
    (`OLDPWD` for the `PWD` of `OLDPWD=/x`, `db.PWD` for that of `db.PWD=x`:
    a dotted property is no shell variable, whose names hold no dot)."""
    while start > 0 and (
        text[start - 1] in _NAME_CHARS
        or (text[start - 1] == "." and start >= 2 and text[start - 2] in _NAME_CHARS)
    ):
        if text[start - 1] in "ntr" and start >= 2 and text[start - 2] == "\\":
            break  # `\nPWD=` in JSON text: the escape ends the line before the name
        start -= 1
    return text[start:end]


_PLACEHOLDERS = frozenset({"null", "none", "nil", "true", "false", "undefined", "[redacted]"})
_REDACTED_FORMS = frozenset({"[redacted]"})


# Where an `_ASSIGNMENT` match can start. Every `_NAME_END` alternative holds
# one of these anchors (`passw` of `password`, `_key` of `my_key`, `dburl`),
# at most `_NAME_LEAD` name characters after the alternative's start
# (`elasticsearch` before `_url`); a match holds no line break. So the
# matches `finditer` finds are those found by trying, left to right past the
# last match, only the positions from which a run of name characters reaches
# an anchor (a test checks they agree). Trying every position (`finditer`)
# took most of a 50 MB result's scan: the pattern has no literal prefix for
# the engine to search for, and the bare words (`key`, `pat` of `path`) are
# in most texts.
_KEY_LEADS = "access secret private client auth master encryption signing account app"
_KEY_LEADS += " service session license"
_URL_LEADS = "database db redis mongo mongodb postgres postgresql pg mysql mariadb amqp"
_URL_LEADS += " rabbitmq broker sentry elastic elasticsearch kafka nats mqtt ftp smtp ldap"
_NAME_ANCHORS = tuple(
    dict.fromkeys(
        [
            *("passw", "passp", "pwd", "secret", "token", "credential", "connection"),
            *("apikey", "api_key", "api-key"),
            *(lead + "key" for lead in _KEY_LEADS.split()),
            *(sep + word for sep in "_.-" for word in ("key", "pass", "pat", "dsn", "url", "uri")),
            *(lead + word for lead in _URL_LEADS.split() for word in ("url", "uri", "dsn")),
        ]
    )
)
_NAME_LEAD = 14
# The characters an anchor's lead may hold, in the lowered text. Its own name:
# it once shared `_NAME_CHARS`'s, and the later binding replaced the name
# characters `_assigned_name` reads, so `MYPWD=` was read as the plain `PWD`.
_LEAD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_ANCHOR_SCAN = ahocorasick_rs.AhoCorasick(
    list(_NAME_ANCHORS), implementation=ahocorasick_rs.Implementation.DFA
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    """`text` with A-Z lowered, the same length (`str.lower` may lengthen one)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _assignment_starts(low: str) -> list[int]:
    starts: list[int] = []
    for _, at, _ in _ANCHOR_SCAN.find_matches_as_indexes(low, overlapping=True):
        lead = at
        while lead > 0 and at - lead < _NAME_LEAD and low[lead - 1] in _LEAD_CHARS:
            lead -= 1
        starts.extend(range(lead, at + 1))
    starts.sort()
    return starts


def _assignment_matches(text: str) -> Iterable[re.Match[str]]:
    """`_ASSIGNMENT.finditer(text)`, trying only the possible starts."""
    pos = 0
    for start in _assignment_starts(_ascii_lower(text)):
        if start < pos:
            continue
        m = _ASSIGNMENT.match(text, start)
        if m is not None:
            yield m
            pos = m.end()


def _assignments(text: str) -> Iterable[tuple[int, int]]:
    for m in _assignment_matches(text):
        if _assigned_name(text, m.start(1), m.end(1)) in PLAIN_VARIABLES:
            continue  # `PWD=/home/me`: a path, not a password
        for g in (2, 3, 4, 5):
            if m.group(g) is not None:
                if m.group(g).lower() not in _PLACEHOLDERS:
                    yield m.span(g)
                break
