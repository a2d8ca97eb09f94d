"""The rules: one or more a family, each a prefilter and a scan.

A rule's needles are lowercase substrings every match holds: the scanner
(`_scanner.py`) runs a rule only on a text that holds one of them. Most
scans are one regex (`_regex`); written by hand are an Authorization
header's value, private key blocks (also cut), and the value given to a
secret name (`_names.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable

from attrs import frozen

from ._names import _REDACTED_FORMS
from ._names import _assignments

_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE


_Scan = Callable[[str], Iterable[tuple[int, int]]]


@frozen
class _Rule:
    family: str
    needles: tuple[str, ...]  # lowercase; every match holds one (a prefilter)
    scan: _Scan


def _regex(
    pattern: str, flags: int = _A, group: int = 0, placeholders: frozenset[str] = frozenset()
) -> _Scan:
    """A rule's scan: each match's `group`, unless it is one of `placeholders`
    (lowercase: what a redactor wrote in its place, not a credential)."""
    compiled = re.compile(pattern, flags)

    def scan(text: str) -> Iterable[tuple[int, int]]:
        for m in compiled.finditer(text):
            found = m.group(group)
            if found and (not placeholders or found.lower() not in placeholders):
                yield m.span(group)

    return scan


# A header's value: a quoted string (escapes kept inside), else the rest of the
# line, since a value may hold quotes of its own (`Digest username="u", ...`).
_AUTH_HEADER = re.compile(
    r"""(?:proxy-)?authorization(?![a-z0-9_])["']?[ \t]*[:=][ \t]*"""
    r"""(?:"((?:[^"\\\r\n]|\\.){3,})"|'([^'\r\n]{3,})'|([^\s"'][^\r\n]{2,}))""",
    _AI,
)


def _auth_headers(text: str) -> Iterable[tuple[int, int]]:
    for m in _AUTH_HEADER.finditer(text):
        g = next(i for i in (1, 2, 3) if m.group(i) is not None)
        start, end = m.span(g)
        yield start, start + len(text[start:end].rstrip())


_KEY_LABEL = r"[ A-Z0-9_-]{0,60}PRIVATE KEY(?: BLOCK)?-----"
_KEY_BEGIN = re.compile(r"-----BEGIN" + _KEY_LABEL, _A)
_KEY_END = re.compile(r"-----END" + _KEY_LABEL, _A)
_KEY_FIND_END_WITHIN = 1 << 16  # a key block is never this long
# A block's body: base64 lines, armor headers (`Proc-Type: 4,ENCRYPTED`),
# newlines as characters or as escapes (`\n` in a JSON string).
_BODY_AFTER = re.compile(r"[A-Za-z0-9+/=:,. \t\r\n\\-]*", _A)
_BODY_BEFORE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\r\n\\")


def _private_keys(text: str) -> Iterable[tuple[int, int]]:
    """BEGIN ... END blocks; a BEGIN without END to the end of its body, an END
    without BEGIN from the start of its body (a cut in either direction)."""
    pos = 0
    covered_to = 0
    for begin in _KEY_BEGIN.finditer(text):
        if begin.start() < pos:
            continue
        end = _KEY_END.search(text, begin.end(), begin.end() + _KEY_FIND_END_WITHIN)
        if end is not None:
            stop = end.end()
        else:
            body = _BODY_AFTER.match(text, begin.end())
            stop = body.end() if body is not None else begin.end()
        pre = _lone_ends(text, covered_to, begin.start())
        yield from pre
        yield begin.start(), stop
        pos = covered_to = stop
    yield from _lone_ends(text, covered_to, len(text))


def _lone_ends(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    spans = []
    for end in _KEY_END.finditer(text, lo, hi):
        start = end.start()
        while start > lo and text[start - 1] in _BODY_BEFORE:
            start -= 1
        spans.append((start, end.end()))
        lo = end.end()
    return spans


# https://docs.gitlab.com/ee/security/tokens/#token-prefixes
_GITLAB_PREFIXES = (
    *("pat", "dt", "rt", "ptt", "ft", "cbt", "soat", "oas", "imt", "agent", "ffct", "sa", "wt"),
)

_RULES: tuple[_Rule, ...] = (
    _Rule("private-key", ("private key",), _private_keys),
    _Rule(
        "aws-access-key-id",
        ("akia", "asia", "abia", "acca", "a3t"),
        _regex(r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    _Rule(
        "aws-secret-access-key",
        ("aws",),
        _regex(r"aws[^\r\n]{0,40}?[\s\"'=:,]([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", _AI, group=1),
    ),
    _Rule("gcp-api-key", ("aiza",), _regex(r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")),
    _Rule(
        "azure-client-secret",
        ("q~",),
        _regex(
            r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"
        ),
    ),
    _Rule(
        "azure-storage-key",
        ("accountkey", "sig="),
        _regex(
            r"AccountKey=([A-Za-z0-9+/]{40,100}={0,2})|[?&]sig=([A-Za-z0-9%+/=]{16,})",
            _AI,
            group=0,
        ),
    ),
    _Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _regex(
            r"(?:gh[pousr]_[A-Za-z0-9]{30,251}|github_pat_[A-Za-z0-9_]{22,244})(?![A-Za-z0-9_])"
        ),
    ),
    _Rule(
        "gitlab-token",
        (*(f"gl{p}-" for p in _GITLAB_PREFIXES), "gr1348941"),
        _regex(
            rf"(?:gl(?:{'|'.join(_GITLAB_PREFIXES)})-[A-Za-z0-9_.-]{{20,300}}"
            r"|GR1348941[A-Za-z0-9_-]{20})(?![A-Za-z0-9_-])"
        ),
    ),
    _Rule(
        "slack-token",
        ("xox", "xapp-", "hooks.slack.com"),
        _regex(
            r"xox[abposre](?:\.xox[bp])?-[A-Za-z0-9-]{8,250}|xapp-[0-9]-[A-Za-z0-9-]{10,250}"
            r"|hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/+-]{20,}",
            _AI,
        ),
    ),
    _Rule(
        "stripe-key",
        ("_live_", "_test_", "_prod_", "whsec_"),
        _regex(r"(?:[spr]k_(?:live|test|prod)_[A-Za-z0-9]{10,247}|whsec_[A-Za-z0-9]{24,})"),
    ),
    _Rule("anthropic-key", ("sk-ant-",), _regex(r"sk-ant-[a-z]{2,8}[0-9]{2}-[A-Za-z0-9_-]{20,}")),
    _Rule(
        "openai-key",
        ("sk-",),
        _regex(
            r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"
            r"|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"
        ),
    ),
    _Rule(
        "model-provider-key",
        ("sk-", "gsk_", "hf_", "xai-", "pplx-", "r8_"),
        _regex(
            r"(?<![A-Za-z0-9_])(?:sk-[A-Za-z0-9_-]{16,}|gsk_[A-Za-z0-9]{40,}|hf_[A-Za-z]{30,}"
            r"|xai-[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,})"
        ),
    ),
    _Rule(
        "jwt",
        ("eyj",),
        _regex(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ),
    _Rule("authorization-header", ("authorization",), _auth_headers),
    _Rule(
        "authorization-header",
        ("bearer",),
        _regex(r"\bbearer[ \t]+([A-Za-z0-9._~+/=-]{3,})", _AI, group=1),
    ),
    _Rule(
        "basic-auth-url",
        (":/",),
        # The password may hold `@` and `:` (unencoded, against RFC 3986): up to
        # the last `@`. A redactor's `[REDACTED]` there is no credential.
        _regex(
            r"://[^\s/:@\"'<>]{0,200}:([^\s/\"'<>]{1,300})@",
            _AI,
            group=1,
            placeholders=_REDACTED_FORMS,
        ),
    ),
    _Rule(
        "basic-auth-url",
        (":/",),
        # The same URL once a path normalisation folded its `//` (`Path`,
        # `normpath`): `https:/user:password@host/x`, as a footprint derived from
        # a command's argument holds it (issue 24). A scheme is required here.
        _regex(
            r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,30}:/(?!/)[^\s/:@\"'<>]{1,200}"
            r":([^\s/\"'<>]{1,300})@",
            _AI,
            group=1,
            placeholders=_REDACTED_FORMS,
        ),
    ),
    _Rule(
        "secret-assignment",
        (
            "pass",
            "pwd",
            "secret",
            "token",
            "credential",
            "key",
            "dsn",
            "url",
            "uri",
            "string",
            "_pat",
            "-pat",
            ".pat",
        ),
        _assignments,
    ),
)
