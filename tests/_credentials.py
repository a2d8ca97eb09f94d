"""Hypothesis strategies for credentials of every family, for everyone's tests.

`credentials(family=None)` draws a `Credential`: `text` is how it appears in
a file or an output (for an assignment: `DB_PASSWORD=...`; for a header:
`Authorization: Bearer ...`), `secret` the part that must never reach a file
metis writes, `pieces` the parts long enough to identify it (a key block's
body lines): `leaked(cred, data)` says whether any of them is in `data`, as
it is or as a JSON encoder escapes it.

`embedded(cred)` draws a text that holds it the ways real content does:
among other lines, split over several lines (key blocks), JSON-escaped (a
service-account file's `"private_key": "-----BEGIN...\\n..."`), with a
`\\uXXXX` or `\\/` escape inside, with CRLF line ends.

`encoded(cred)` draws a text that holds it encoded: base64 or base64url of
a text holding it (a Kubernetes Secret's `data:`, `echo ... | base64`),
percent-encoded (a URL query, a form body), or one of these nested once
(base64 in base64, base64 in a URL query, percent-escapes in base64);
`Encoded.blob` is the encoded span, which must be redacted whole.

`DOCUMENTED` lists documented example credentials (AWS's example keys,
RFC 7519's JWT, Stripe's published test key, ...), and `KEY_FILES` the real
private keys in tests/data/credentials (see its README).

Shapes follow the formats' documentation; see specs/secrets.md.
"""

from __future__ import annotations

import base64
import json
import string
import urllib.parse
from pathlib import Path

from attrs import frozen
from hypothesis import strategies as st

from metis_trace import FAMILY_NAMES


@frozen
class Credential:
    family: str
    text: str
    secret: str
    pieces: tuple[str, ...] = ()

    def needles(self) -> tuple[str, ...]:
        return self.pieces or (self.secret,)


ALNUM = string.ascii_letters + string.digits
UPPER_B32 = string.ascii_uppercase + "234567"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
# A password's characters: printable ASCII that ends neither a bare value
# nor a URL's userinfo.
PASSWORD_CHARS = ALNUM + "!#%*+-._~^"

DATA = Path(__file__).parent / "data" / "credentials"
KEY_FILES = tuple(
    sorted(DATA.glob("*.pem")) + sorted(DATA.glob("*.key")) + [DATA / "pgp-secret.asc"]
)


def _s(alphabet: str, n: int, m: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=n, max_size=n if m is None else m)


def _whole(family: str) -> st.SearchStrategy[str]:
    """Strategies of a whole-token family: the token is the secret."""
    return _TOKENS[family]


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@st.composite
def _jwt(draw: st.DrawFn) -> str:
    alg = draw(st.sampled_from(["HS256", "RS256", "ES256", "none"]))
    header = json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":"))
    claims = draw(
        st.dictionaries(
            st.sampled_from(["sub", "iss", "aud", "name", "scope"]),
            _s(ALNUM, 4, 16),
            min_size=1,
            max_size=4,
        )
    )
    claims["iat"] = draw(st.integers(1_500_000_000, 1_900_000_000))
    payload = json.dumps(claims, separators=(",", ":"))
    sig = "" if alg == "none" else _b64url(draw(st.binary(min_size=32, max_size=64)))
    return f"{_b64url(header.encode())}.{_b64url(payload.encode())}.{sig}"


def _join(*parts: st.SearchStrategy[str] | str) -> st.SearchStrategy[str]:
    return st.tuples(*(p if isinstance(p, st.SearchStrategy) else st.just(p) for p in parts)).map(
        "".join
    )


_TOKENS: dict[str, st.SearchStrategy[str]] = {
    "aws-access-key-id": _join(
        st.sampled_from(["AKIA", "ASIA", "ABIA", "ACCA"]), _s(UPPER_B32, 16)
    ),
    "gcp-api-key": _join("AIza", _s(URLSAFE, 35)),
    "azure-client-secret": _join(
        _s(ALNUM + "_~", 3), _s(string.digits, 1), "Q~", _s(ALNUM + "_~-", 31, 34)
    ),
    "github-token": st.one_of(
        _join(st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]), _s(ALNUM, 36)),
        _join("github_pat_", _s(ALNUM, 22), "_", _s(ALNUM, 59)),
    ),
    "gitlab-token": st.one_of(
        _join(st.sampled_from(["glpat-", "gldt-", "glrt-", "glft-", "glsoat-"]), _s(URLSAFE, 20)),
        _join("glptt-", _s(HEX, 40)),
        _join("GR1348941", _s(URLSAFE, 20)),
    ),
    "slack-token": st.one_of(
        _join(
            st.sampled_from(["xoxb-", "xoxp-", "xoxa-", "xoxr-"]),
            _s(string.digits, 10, 13),
            "-",
            _s(string.digits, 10, 13),
            "-",
            _s(ALNUM, 24, 32),
        ),
        _join("xapp-1-A", _s(UPPER_B32, 10), "-", _s(string.digits, 13), "-", _s(HEX, 64)),
        _join(
            "https://hooks.slack.com/services/T",
            _s(UPPER_B32, 8),
            "/B",
            _s(UPPER_B32, 8),
            "/",
            _s(ALNUM, 24),
        ),
    ),
    "stripe-key": st.one_of(
        _join(st.sampled_from(["sk_live_", "sk_test_", "rk_live_", "rk_test_"]), _s(ALNUM, 24, 99)),
        _join("whsec_", _s(ALNUM, 32)),
    ),
    "anthropic-key": _join(
        st.sampled_from(["sk-ant-api03-", "sk-ant-admin01-"]), _s(URLSAFE, 93), "AA"
    ),
    "openai-key": st.one_of(
        _join(
            st.sampled_from(["sk-proj-", "sk-svcacct-", "sk-admin-"]),
            _s(URLSAFE, 58),
            "T3BlbkFJ",
            _s(URLSAFE, 58),
        ),
        _join("sk-", _s(ALNUM, 20), "T3BlbkFJ", _s(ALNUM, 20)),
    ),
    "model-provider-key": st.one_of(
        _join("gsk_", _s(ALNUM, 52)),
        _join("hf_", _s(string.ascii_letters, 34)),
        _join("xai-", _s(ALNUM, 80)),
        _join("pplx-", _s(ALNUM, 48)),
        _join("r8_", _s(ALNUM, 37)),
        _join("sk-or-v1-", _s(HEX, 64)),
        _join("sk-", _s(HEX, 32)),  # DeepSeek
    ),
    "jwt": _jwt(),
}


@st.composite
def _private_key(draw: st.DrawFn) -> Credential:
    real = draw(st.booleans())
    if real:
        text = draw(st.sampled_from(KEY_FILES)).read_text()
    else:
        label = draw(st.sampled_from(["RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", ""]))
        lines = draw(st.lists(_s(B64, 64), min_size=2, max_size=12))
        last = draw(_s(B64, 4, 60)) + draw(st.sampled_from(["", "=", "=="]))
        body = "\n".join([*lines, last])
        text = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----\n"
    body_lines = [ln for ln in text.splitlines()[1:-1] if len(ln) >= 16 and "-----" not in ln]
    return Credential("private-key", text, body_lines[0], tuple(body_lines))


_AWS_SECRET_NAMES = ("aws_secret_access_key = ", "AWS_SECRET_ACCESS_KEY=", "aws secret key: ")
_AUTH_SCHEMES = ("Bearer", "Basic", "Token", "Digest", "Negotiate", "AWS4-HMAC-SHA256", "ApiKey")
_SECRET_NAMES = (
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apiKey",
    "client_secret",
    "access_token",
    "privateKey",
    "DB_PASSWORD",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "MY_SERVICE_KEY",
    "APP_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SMTP_PASS",
    "SENTRY_DSN",
)
_URL_NAMES = ("DATABASE_URL", "REDIS_URL", "MONGODB_URI", "db_url")
_FORMS = (
    '"{name}": "{value}"',  # JSON
    "{name}: {value}",  # YAML
    "{name}: '{value}'",
    "{name}={value}",  # env
    'export {name}="{value}"',
    "{name} = {value}",  # ini, TOML without quotes
    "{name} = '{value}'",  # Python, TOML
    "--{name}={value}",  # a command line
)


@st.composite
def _assignment(draw: st.DrawFn) -> Credential:
    if draw(st.booleans()):
        name = draw(st.sampled_from(_URL_NAMES))
        password = draw(_s(PASSWORD_CHARS, 12, 24))
        user = draw(_s(string.ascii_lowercase, 3, 8))
        value = f"postgres://{user}:{password}@db.internal:5432/app"
        secret = password
    else:
        name = draw(st.sampled_from(_SECRET_NAMES))
        value = secret = draw(_s(PASSWORD_CHARS, 12, 32))
    form = draw(st.sampled_from(_FORMS))
    return Credential("secret-assignment", form.format(name=name, value=value), secret)


@st.composite
def _credential(draw: st.DrawFn, family: str) -> Credential:
    if family in _TOKENS:
        token = draw(_TOKENS[family])
        return Credential(family, token, token)
    if family == "private-key":
        return draw(_private_key())
    if family == "aws-secret-access-key":
        key = draw(_s(B64, 40))
        return Credential(family, draw(st.sampled_from(_AWS_SECRET_NAMES)) + key, key)
    if family == "azure-storage-key":
        key = draw(_s(B64, 86)) + "=="
        account = draw(_s(string.ascii_lowercase, 3, 12))
        text = (
            f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};"
            "EndpointSuffix=core.windows.net"
        )
        return Credential(family, text, key)
    if family == "authorization-header":
        scheme = draw(st.sampled_from(_AUTH_SCHEMES))
        cred = draw(_s(B64 + "-._~", 16, 64))
        header = draw(st.sampled_from(["Authorization", "authorization", "Proxy-Authorization"]))
        return Credential(family, f"{header}: {scheme} {cred}", cred)
    if family == "basic-auth-url":
        password = draw(_s(PASSWORD_CHARS, 12, 24))
        user = draw(_s(string.ascii_lowercase, 3, 8))
        scheme = draw(st.sampled_from(["https", "postgres", "mysql", "redis", "amqp", "ftp"]))
        return Credential(family, f"{scheme}://{user}:{password}@host.example:1234/x", password)
    if family == "secret-assignment":
        return draw(_assignment())
    raise ValueError(f"no strategy for family {family!r}")


# Every family a text can hold (environment-value is the redactor's own: its
# values are whatever the environment holds, so tests set one themselves).
GENERATED_FAMILIES = tuple(sorted(FAMILY_NAMES - {"environment-value"}))


def credentials(family: str | None = None) -> st.SearchStrategy[Credential]:
    """A credential of `family`, or of any family."""
    if family is not None:
        return _credential(family)
    return st.sampled_from(GENERATED_FAMILIES).flatmap(_credential)


# --- documented examples ------------------------------------------------------

_RFC7519_JWT = (
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
    ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)
DOCUMENTED: tuple[tuple[Credential, str], ...] = (
    (
        Credential("aws-access-key-id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html",
    ),
    (
        Credential(
            "aws-secret-access-key",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html",
    ),
    (
        Credential("jwt", _RFC7519_JWT, _RFC7519_JWT),
        "https://www.rfc-editor.org/rfc/rfc7519#section-3.1",
    ),
    (
        Credential(
            "stripe-key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
        ),
        "https://docs.stripe.com/api/authentication (the published test key)",
    ),
    (
        Credential(
            "slack-token",
            "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1MBS",
            "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1MBS",
        ),
        "gitleaks cmd/generate/config/rules/slack.go (true positives)",
    ),
    (
        Credential(
            "azure-client-secret",
            "client_secret=bP88Q~rcBcYjzzOhg1Hnn76Wm3jGgakZiZ.8vMgR",
            "bP88Q~rcBcYjzzOhg1Hnn76Wm3jGgakZiZ.8vMgR",
        ),
        "gitleaks cmd/generate/config/rules/azure.go (true positives)",
    ),
    (
        Credential(
            "anthropic-key",
            "sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzAA",
            "sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzAA",
        ),
        "gitleaks cmd/generate/config/rules/anthropic.go (true positives)",
    ),
    (
        Credential(
            "openai-key",
            "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",
            "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",
        ),
        "gitleaks cmd/generate/config/rules/openai.go (true positives)",
    ),
    (
        Credential(
            "authorization-header",
            "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        ),
        "https://www.rfc-editor.org/rfc/rfc7617#section-2 (Aladdin:open sesame)",
    ),
)


# --- embedding ------------------------------------------------------------------

_FILLER = st.text(string.ascii_letters + string.digits + " .,#()[]{}", max_size=30)
_SEPARATORS = st.sampled_from([" ", "\n", "\t", '"', "'", "=", ": ", "(", "\r\n", " | "])


def _escape_one(text: str, index: int) -> str:
    """`text` with the character at `index` written as a JSON `\\uXXXX` escape."""
    return text[:index] + f"\\u{ord(text[index]):04x}" + text[index + 1 :]


@st.composite
def embedded(draw: st.DrawFn, cred: Credential) -> str:
    """A text that holds `cred` the ways real content does (see the module doc)."""
    text = cred.text
    how = draw(
        st.sampled_from(["plain", "lines", "json-escaped", "u-escape", "slash-escaped", "crlf"])
    )
    if how == "json-escaped":  # inside a JSON string, as a file holds it
        text = json.dumps(text)[1:-1]
    elif how == "u-escape":
        text = _escape_one(text, draw(st.integers(0, min(len(text) - 1, 3))))
    elif how == "slash-escaped":
        text = text.replace("/", "\\/")
    elif how == "crlf":
        text = text.replace("\n", "\r\n")
    # Filler never holds the credential by chance (`0000...` twice).
    filler = _FILLER.filter(lambda s: not any(p in s for p in cred.needles()))
    before = draw(filler) + draw(_SEPARATORS)
    after = draw(_SEPARATORS) + draw(filler)
    if how == "lines":
        before = "".join(draw(st.lists(filler.map(lambda s: s + "\n"), max_size=3))) + before
        after = after + "".join(draw(st.lists(filler.map(lambda s: "\n" + s), max_size=3)))
    return before + text + after


def json_forms(piece: str) -> tuple[str, ...]:
    """`piece` as it may sit in a file: as it is, or as JSON encoders escape it."""
    forms = {piece, json.dumps(piece)[1:-1], json.dumps(piece, ensure_ascii=False)[1:-1]}
    forms.add(piece.replace("/", "\\/"))
    return tuple(forms)


def leaked(cred: Credential, data: str) -> list[str]:
    """The pieces of `cred` found in `data` (as they are, or escaped)."""
    return [p for p in cred.needles() for form in json_forms(p) if form in data]


# --- encoded ----------------------------------------------------------------------


@frozen
class Encoded:
    """`text` holds `cred` encoded as `blob` (`how`: the encodings, outermost first)."""

    cred: Credential
    text: str
    blob: str
    how: tuple[str, ...]


def _encode(how: str, text: str) -> str:
    if how == "base64":
        return base64.b64encode(text.encode()).decode("ascii")
    if how == "base64url":
        return base64.urlsafe_b64encode(text.encode()).decode("ascii").rstrip("=")
    return urllib.parse.quote(text, safe="")  # percent: every reserved character escaped


_ENCODINGS = ("base64", "base64url", "percent")
_ENCODED_CONTEXTS = (
    "  password: {}\n",  # already secret-named: the others are what decoding adds
    "  .dockerconfigjson: {}\n",
    "  config: {}\n",
    "echo {} | base64 -d\n",
    '{{"data": "{}"}}',
    "GET /cb?state={}&x=1 HTTP/1.1\n",
    "body=a&payload={}\n",
)


@st.composite
def encoded(draw: st.DrawFn, cred: Credential) -> Encoded:
    """A text holding `cred` inside an encoded span (see the module doc)."""
    inner = draw(st.sampled_from(["", " ", "a ", "line\n", '{"v": "'])) + cred.text
    inner += draw(st.sampled_from(["", "\n", '"}', " end", "  "]))
    how = draw(
        st.one_of(
            st.tuples(st.sampled_from(_ENCODINGS)),
            st.tuples(st.sampled_from(["base64", "percent"]), st.sampled_from(["base64"])),
            st.tuples(st.sampled_from(["base64"]), st.sampled_from(["percent"])),
        )
    )
    blob = inner
    for step in reversed(how):
        blob = _encode(step, blob)
    context = draw(st.sampled_from(_ENCODED_CONTEXTS))
    if how[0] == "percent":  # a query or form value: percent-escapes are at home there
        context = draw(st.sampled_from(_ENCODED_CONTEXTS[-2:]))
    return Encoded(cred, context.format(blob), blob, how)
