"""The shared credential detector (specs/secrets.md).

`find_credentials(text)` lists the credentials in a text as non-overlapping
`CredentialFinding(family, start, end)` spans, sorted. The runtime's
redactor replaces them; the TRACE-2 check looks for them in the files a run
wrote. The rules are our own, written from the formats' documentation and
from the shapes gitleaks and detect-secrets look for (sources per family in
`FAMILIES` and specs/secrets.md).

Three things every rule respects:
- escapes do not hide a credential: where the text holds backslash escapes
  (`\\u0041KIA...`, `https:\\/\\/u:p@h`, `\\n` inside a PEM block), the text is
  also scanned with them decoded (up to three levels deep), and what is
  found there is mapped back to the original span;
- a cut does not hide one: a private key without its END line is found to
  the end of its body, an END line without its BEGIN from the start of its
  body, so a truncated text never shows a key's body unflagged;
- everything is ASCII: the rules match ASCII only (`re.ASCII`), so a JSON
  encoder's escapes of other characters cannot split a match, and
  `may_hold_credential` can screen JSON text by plain substrings.

Every rule runs in linear time (no nested or adjacent unbounded repeats).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import ahocorasick_rs
from attrs import frozen

from ._encodings import (
    BASE64_RUN,
    PERCENT_ESCAPE,
    FormIndex,
    base64_forms,
    decode_base64,
    extended,
    percent_tokens,
    short_in_some_alignment,
    unpercent,
)
from ._offsets import IDENTITY, Offsets, PositionMap, compose
from ._plain_variables import PLAIN_VARIABLES


@frozen
class CredentialFinding:
    """A credential of `family` at `text[start:end]`."""

    family: str
    start: int
    end: int


@frozen
class CredentialFamily:
    """One family of credentials: its name, what it is, where the shape is documented."""

    name: str
    description: str
    sources: tuple[str, ...]


FAMILIES: tuple[CredentialFamily, ...] = (
    CredentialFamily(
        "aws-access-key-id",
        "AWS access key ids (AKIA long-term, ASIA temporary, ABIA, ACCA, A3T...)",
        (
            "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html",
            "gitleaks cmd/generate/config/rules/aws.go",
        ),
    ),
    CredentialFamily(
        "aws-secret-access-key",
        "AWS secret access keys: 40 base64 characters near the word aws",
        ("https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html",),
    ),
    CredentialFamily(
        "gcp-api-key",
        "Google Cloud / Google AI API keys (AIza + 35)",
        (
            "https://cloud.google.com/docs/authentication/api-keys",
            "gitleaks cmd/generate/config/rules/gcp.go",
        ),
    ),
    CredentialFamily(
        "azure-client-secret",
        "Azure AD (Entra ID) client secrets: three characters, a digit, Q~, 31-34 more",
        (
            "https://learn.microsoft.com/en-us/purview/sit-defn-azure-ad-client-secret",
            "gitleaks cmd/generate/config/rules/azure.go",
        ),
    ),
    CredentialFamily(
        "azure-storage-key",
        "Azure storage account keys (AccountKey=...) and SAS signatures (sig=...)",
        (
            "https://learn.microsoft.com/en-us/azure/storage/common/storage-configure-connection-string",
            "https://learn.microsoft.com/en-us/rest/api/storageservices/create-service-sas",
        ),
    ),
    CredentialFamily(
        "github-token",
        "GitHub tokens: classic ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained github_pat_",
        (
            "https://github.blog/2021-04-05-behind-githubs-new-authentication-token-formats/",
            "gitleaks cmd/generate/config/rules/github.go",
        ),
    ),
    CredentialFamily(
        "gitlab-token",
        "GitLab tokens: glpat-, gldt-, glrt-, glptt-, glcbt-, ... and runner GR1348941",
        (
            "https://docs.gitlab.com/ee/security/tokens/#token-prefixes",
            "gitleaks cmd/generate/config/rules/gitlab.go",
        ),
    ),
    CredentialFamily(
        "slack-token",
        "Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxe-, xoxs-, xapp-) and webhook URLs",
        (
            "https://api.slack.com/authentication/token-types",
            "https://api.slack.com/messaging/webhooks",
            "gitleaks cmd/generate/config/rules/slack.go",
        ),
    ),
    CredentialFamily(
        "stripe-key",
        "Stripe secret, restricted and publishable keys (sk_/rk_/pk_ live/test) and whsec_",
        ("https://docs.stripe.com/keys", "gitleaks cmd/generate/config/rules/stripe.go"),
    ),
    CredentialFamily(
        "anthropic-key",
        "Anthropic API, admin and OAuth keys (sk-ant-api03-, sk-ant-admin01-, sk-ant-oat01-)",
        ("gitleaks cmd/generate/config/rules/anthropic.go",),
    ),
    CredentialFamily(
        "openai-key",
        "OpenAI keys (sk-proj-, sk-svcacct-, sk-admin-, legacy sk-...T3BlbkFJ...)",
        ("gitleaks cmd/generate/config/rules/openai.go",),
    ),
    CredentialFamily(
        "model-provider-key",
        "other model providers: any sk-... key (DeepSeek, OpenRouter sk-or-, ...), Groq "
        "gsk_, Hugging Face hf_, xAI xai-, Perplexity pplx-, Replicate r8_",
        (
            "https://huggingface.co/docs/hub/security-tokens",
            "gitleaks cmd/generate/config/rules/groq.go, huggingface.go",
        ),
    ),
    CredentialFamily(
        "private-key",
        "PEM, OpenSSH and PGP private key blocks, multi-line or with escaped newlines, "
        "also cut (no END line, or no BEGIN line)",
        (
            "https://www.rfc-editor.org/rfc/rfc7468",
            "https://www.rfc-editor.org/rfc/rfc4880#section-6.2",
            "https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.key",
            "gitleaks cmd/generate/config/rules/privatekey.go",
        ),
    ),
    CredentialFamily(
        "jwt",
        "JSON Web Tokens (compact serialization: eyJ header . payload . signature)",
        ("https://www.rfc-editor.org/rfc/rfc7519", "https://www.rfc-editor.org/rfc/rfc7515"),
    ),
    CredentialFamily(
        "authorization-header",
        "the credentials of an Authorization or Proxy-Authorization header of any scheme, "
        "and Bearer tokens",
        (
            "https://www.rfc-editor.org/rfc/rfc9110#section-11.6.2",
            "https://www.rfc-editor.org/rfc/rfc6750",
            "gitleaks cmd/generate/config/rules/curl.go",
        ),
    ),
    CredentialFamily(
        "basic-auth-url",
        "the password in a URL's userinfo (scheme://user:password@host), also once a "
        "path normalisation folded the URL's // (scheme:/user:password@host)",
        (
            "https://www.rfc-editor.org/rfc/rfc3986#section-3.2.1",
            "detect-secrets detect_secrets/plugins/basic_auth.py",
        ),
    ),
    CredentialFamily(
        "secret-assignment",
        "the value given to a secret-named field or variable, in JSON, YAML, env, ini and "
        "code form: password, passwd, pwd, secret, token, api_key, credentials, *_KEY, "
        "*_TOKEN, *_SECRET, *_PASSWORD, *_CREDENTIALS, DATABASE_URL-style URLs",
        (
            "detect-secrets detect_secrets/plugins/keyword.py",
            "gitleaks cmd/generate/config/rules/generic.go",
        ),
    ),
    CredentialFamily(
        "environment-value",
        "the literal value of a secret-named environment variable (the redactor's own)",
        ("specs/secrets.md",),
    ),
)
FAMILY_NAMES = frozenset(f.name for f in FAMILIES)

_A = re.ASCII
_AI = re.ASCII | re.IGNORECASE

# --- names of secret fields and variables ---------------------------------------

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


# --- the rules ------------------------------------------------------------------

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
    """The whole variable name whose last word the assignment matched at
    `start:end` (`OLDPWD` for the `PWD` of `OLDPWD=/x`)."""
    while start > 0 and text[start - 1] in _NAME_CHARS:
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
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
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
        while lead > 0 and at - lead < _NAME_LEAD and low[lead - 1] in _NAME_CHARS:
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

# --- encoded credentials -------------------------------------------------------

# A base64 run is decoded only if it holds a form of one of these needles
# (`base64_forms`): the rules' needles in the case they are written in, the
# names of secret fields in three cases followed by what comes after a name.
# What it decodes to is scanned like any text, `ENCODING_DEPTH` encodings
# deep (an encoding inside another: a URL with percent-escapes in a base64
# blob, a base64 value in a URL's query, base64 in base64).
ENCODING_DEPTH = 2
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


# --- escapes --------------------------------------------------------------------

_SIMPLE_ESCAPES = {
    "/": "/",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "`": "`",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "b": "\b",
    "f": "\f",
}
_UNESCAPE_DEPTH = 3


# One escape `_unescape` decodes; a backslash before anything else stays as it is.
_ESCAPE = re.compile(r"\\(?:[/\\\"'`nrtbf]|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2})")


def _unescape(text: str) -> tuple[str, Offsets] | None:
    """`text` with one level of backslash escapes decoded (JSON's, plus `\\xHH`
    and `\\'`), and for each decoded position the original one (plus the
    end), as a piecewise linear map (`_offsets`): each decoded character
    comes from its escape's backslash. None if nothing was decoded."""
    out: list[str] = []
    view_starts, origin_starts = [0], [0]
    pos = removed = 0
    for m in _ESCAPE.finditer(text):
        at, stop = m.span()
        escape = m.group()
        out.append(text[pos:at])
        out.append(_SIMPLE_ESCAPES[escape[1]] if stop - at == 2 else chr(int(escape[2:], 16)))
        view = at - removed
        view_starts += (view, view + 1)
        origin_starts += (at, stop)
        removed += stop - at - 1
        pos = stop
    if not pos:
        return None
    out.append(text[pos:])
    return "".join(out), Offsets(view_starts, origin_starts)


# --- finding --------------------------------------------------------------------


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


def _views(text: str) -> Iterable[tuple[str, PositionMap]]:
    """`text`, then with up to `_UNESCAPE_DEPTH` levels of backslash escapes
    decoded, each with the original position of every character (plus the end)."""
    view, where = text, IDENTITY
    yield view, where
    for _ in range(_UNESCAPE_DEPTH):
        if "\\" not in view:
            break
        decoded = _unescape(view)
        if decoded is None:
            break
        view, inner = decoded
        where = compose(where, inner)
        yield view, where


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


# --- the screen -----------------------------------------------------------------

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
