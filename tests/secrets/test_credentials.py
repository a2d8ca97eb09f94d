"""The shared credential detector: every family found wherever it sits
(escaped, split over lines, cut), documented examples and real key files,
the JSON screen never misses, ordinary text left alone."""

from __future__ import annotations

import itertools
import json
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import assume
from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import to_json

from metis_runtime._redact import _screen
from metis_trace import FAMILIES
from metis_trace import FAMILY_NAMES
from metis_trace import CredentialFinding
from metis_trace import find_credentials
from metis_trace import may_hold_credential
from metis_trace import redact_credentials
from metis_trace import replace_spans
from metis_trace import secret_name
from tests._credentials import DOCUMENTED
from tests._credentials import GENERATED_FAMILIES
from tests._credentials import KEY_FILES
from tests._credentials import Credential
from tests._credentials import Encoded
from tests._credentials import credentials
from tests._credentials import embedded
from tests._credentials import encoded
from tests._credentials import leaked

ROOT = Path(__file__).resolve().parents[2]


def _covered(text: str, cred: Credential) -> list[str]:
    """The pieces of `cred` that survive redaction of `text` (empty: none)."""
    return leaked(cred, redact_credentials(text))


@pytest.mark.parametrize("family", GENERATED_FAMILIES)
@given(data=st.data())
def test_every_family_is_found_wherever_it_sits(family: str, data: st.DataObject) -> None:
    cred = data.draw(credentials(family))
    text = data.draw(embedded(cred))
    assert _covered(text, cred) == [], (family, text)


@given(cred=credentials())
def test_the_family_is_named(cred: Credential) -> None:
    found = find_credentials(cred.text)
    assert found, cred
    assert all(f.family in FAMILY_NAMES for f in found)
    start = cred.text.index(cred.needles()[0])
    end = start + len(cred.needles()[0])
    assert [f for f in found if f.start < end and start < f.end], (cred, found)


@pytest.mark.parametrize(("cred", "source"), DOCUMENTED, ids=[c.family for c, _ in DOCUMENTED])
def test_documented_examples(cred: Credential, source: str) -> None:
    found = find_credentials(f"see {cred.text} here")
    assert [f.family for f in found] == [cred.family], source
    assert _covered(cred.text, cred) == []


@pytest.mark.parametrize("path", KEY_FILES, ids=[p.name for p in KEY_FILES])
def test_real_private_keys_whole_cut_and_escaped(path: Path) -> None:
    text = path.read_text()
    body = "".join(ln for ln in text.splitlines() if "-----" not in ln)
    chunks = [body[i : i + 12] for i in range(0, len(body) - 12, 6)]

    def visible(redacted: str) -> list[str]:
        flat = "".join(redacted.split())
        return [c for c in chunks if c in flat]

    assert find_credentials(text) == [CredentialFinding("private-key", 0, len(text.rstrip("\n")))]
    for cut in range(0, len(text), 7):  # a cut in either direction never shows the body
        assert visible(redact_credentials("log: " + text[:cut])) == [], cut
        assert visible(redact_credentials(text[cut:] + "\nmore")) == [], cut
    service_account = json.dumps({"type": "service_account", "private_key": text}, indent=1)
    assert visible(redact_credentials(service_account)) == []
    assert visible(redact_credentials(json.dumps(service_account))) == []  # escaped twice


@given(cred=credentials(), key=st.sampled_from(["content", "command", "text", "x"]))
def test_the_json_screen_never_misses(cred: Credential, key: str) -> None:
    for obj in ({key: cred.text}, {key: [f"a {cred.text} b"]}, {key: {"nested": cred.text}}):
        for line in (
            json.dumps(obj),
            json.dumps(obj, separators=(",", ":")),
            to_json(obj).decode(),
        ):
            assert may_hold_credential(line), line


@given(name=st.sampled_from(["password", "API_KEY", "db_pass", "GITHUB_TOKEN", "DATABASE_URL"]))
def test_the_screen_sees_a_string_under_a_secret_named_key(name: str) -> None:
    assert secret_name(name)
    assert may_hold_credential(json.dumps({name: "hunter2"}, separators=(",", ":")))


def test_names() -> None:
    for name in (
        "password",
        "PASSWORD",
        "db_password",
        "MY_API_KEY",
        "apiKey",
        "clientSecret",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "DATABASE_URL",
        "redis_url",
        "SENTRY_DSN",
        "AWS_SECRET_ACCESS_KEY",
        "x-api-key",
        "access_token",
        "smtp.pass",
    ):
        assert secret_name(name), name
    for name in (
        "key",
        "pass",
        "path",
        "tokens",
        "input_tokens",
        "secret_name",
        "keyboard",
        "url",
        "PATH",
        "HOME",
        "monkey",
        "passage",
        "token_url",
        "author",
        "PWD",
        "OLDPWD",
    ):
        assert not secret_name(name), name


def test_ordinary_text_is_left_alone() -> None:
    # The repository's own trace-format page and a recorded demo-like trace:
    # prose and events with no credential in them.
    page = (ROOT / "specs" / "trace-format.md").read_text()
    assert find_credentials(page) == []
    lines = [
        '{"seq":3,"t":0.007464,"causes":[2],"kind":"decision","occ":"1.0","decision":"allow",'
        '"stage":"mode","rule":null,"facts":{"mode":"acceptEdits","kind":"read_only",'
        '"protected":false,"secret":false,"in_scope":true,"transition":false,"rules":[]},'
        '"route":"headless","cls":"safe","key":null}',
        '{"seq":6,"t":0.007677,"causes":[5],"kind":"result","occ":"1.0","call_id":'
        '"toolu_01VRpZ7oRezbD698Bu1JuJp7","status":"ok","content":"README.md\\nsrc/"}',
        '{"seq":1,"t":0.003551,"causes":[0],"kind":"request","turn":1}',
    ]
    for line in lines:
        assert not may_hold_credential(line), line
        assert find_credentials(line) == []
    for text in (
        "password: null",
        "the key is in the drawer",
        "Basic tutorial",
        "a token of thanks",
        "author = Ann",
        "https://example.com:8080/x@y",
    ):
        assert find_credentials(text) == [], text


def test_findings_are_sorted_and_disjoint() -> None:
    text = "AKIAIOSFODNN7EXAMPLE password=AKIAIOSFODNN7EXAMPLE sk-ant-api03-" + "a" * 30
    found = find_credentials(text)
    assert found == sorted(found, key=lambda f: f.start)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))


def test_every_family_is_documented_in_the_spec() -> None:
    page = (ROOT / "specs" / "secrets.md").read_text()
    for family in FAMILIES:
        assert f"`{family.name}`" in page, family.name


_FRAGMENTS = st.sampled_from(
    [
        "password",
        "key",
        "secret",
        "token",
        "_key",
        "url",
        "pat",
        "=",
        ":",
        '"',
        "\\",
        "\t",
        " ",
        "\\u0041",
        "AKIA",
        "sk-",
        "ghp_",
        "://",
        "@",
        "eyJ",
        "Bearer",
        "x",
        "é",
        "\u212a",
        "\n",
    ]
)


@given(parts=st.lists(st.one_of(_FRAGMENTS, st.text(max_size=5)), max_size=12))
def test_the_runtime_screen_is_the_definition(parts: list[str]) -> None:
    from metis_runtime._redact import _screen

    text = "".join(parts)
    for obj in ({"a": text}, {text: "v"}, [text, {"k": text}]):
        for line in (
            json.dumps(obj),
            json.dumps(obj, separators=(",", ":")),
            to_json(obj, ensure_ascii=True).decode(),
        ):
            assert _screen(line.encode("ascii"), ()) == may_hold_credential(line), line


# --- encoded credentials --------------------------------------------------------


def _visible(enc: Encoded, redacted: str) -> list[str]:
    """What of the encoded span (a base64 one is redacted whole; in a
    percent-encoded one, the credential) or of the credential survives."""
    if enc.how == ("percent",):
        quoted = [urllib.parse.quote(p, safe="") for p in enc.cred.needles()]
        return [q for q in quoted if q in redacted] + leaked(enc.cred, redacted)
    pieces = [enc.blob[i : i + 12] for i in range(0, max(len(enc.blob) - 12, 1), 6)]
    return [p for p in pieces if p in redacted] + leaked(enc.cred, redacted)


_SHORT_NEEDLE_FAMILIES = {"azure-client-secret", "model-provider-key", "jwt", "basic-auth-url"}


@pytest.mark.parametrize("family", GENERATED_FAMILIES)
@given(data=st.data())
def test_every_family_is_found_encoded(family: str, data: st.DataObject) -> None:
    enc = data.draw(encoded(data.draw(credentials(family))))
    # specs/secrets.md: base64 in base64 only for needles of four characters or more.
    assume(enc.how != ("base64", "base64") or family not in _SHORT_NEEDLE_FAMILIES)
    assert _visible(enc, redact_credentials(enc.text)) == [], (enc.how, enc.text)
    for line in (json.dumps({"content": enc.text}), to_json({"x": [enc.text]}).decode()):
        assert may_hold_credential(line), line
        assert _screen(line.encode("ascii"), ()), line


ENCODED_DATA = ROOT / "tests" / "data" / "credentials" / "encoded"
# file -> (what must be gone after redaction, what is new: found only by decoding)
_ENCODED_FIXTURES = {
    "k8s-secret-data.yaml": (["MWYyZDFlMmU2N2Rm"], False),
    "k8s-dockerconfigjson.yaml": (["eyJhdXRocyI6"], True),
    "k8s-aws-credentials.yaml": (["W2RlZmF1bHRd"], True),
    "percent-query.txt": (["s3cr3t-pa55", "AKIAIOSFODNN7EXAMPLE"], True),
}


@pytest.mark.parametrize("name", sorted(_ENCODED_FIXTURES))
def test_documented_encoded_examples(name: str) -> None:
    import metis_trace._credentials._scanner as detector

    text = (ENCODED_DATA / name).read_text()
    gone, new = _ENCODED_FIXTURES[name]
    redacted = redact_credentials(text)
    for piece in gone:
        assert piece in text
        assert piece not in redacted, (name, redacted)
    assert "apiVersion: v1" in redacted or "Host: example.com" in redacted
    plain = detector.CredentialScanner()
    old_depth = detector.ENCODING_DEPTH
    try:
        detector.ENCODING_DEPTH = 0  # the detector without decoding (the old one)
        undecoded = replace_spans(text, plain.find(text), "[REDACTED]")
    finally:
        detector.ENCODING_DEPTH = old_depth
    assert (undecoded != redacted) is new, name


def test_ordinary_base64_and_percent_escapes_are_left_alone() -> None:
    text = (ENCODED_DATA / "ordinary.txt").read_text()
    assert find_credentials(text) == []
    assert redact_credentials(text) == text


def test_no_new_redactions_in_the_shared_corpora() -> None:
    """Real Claude Code sessions and provider streams (../shared/corpora, when
    present): decoding adds no finding (README.md gives the figure)."""
    import metis_trace._credentials._scanner as detector

    corpora = ROOT.parent / "shared" / "corpora"
    files = sorted(p for p in corpora.rglob("*.jsonl") if p.stat().st_size < 2_000_000)[:12]
    if not files:
        pytest.skip("../shared/corpora is not here")
    for path in files:
        text = path.read_text(errors="replace")
        with_decoding = find_credentials(text)
        old_depth = detector.ENCODING_DEPTH
        try:
            detector.ENCODING_DEPTH = 0
            without = detector.CredentialScanner().find(text)
        finally:
            detector.ENCODING_DEPTH = old_depth
        assert with_decoding == without, path.name


# --- path and settings variables are not secrets (issue 26) ----------------------


def test_published_plain_variables_are_not_secrets() -> None:
    """POSIX XBD chapter 8, XDG base directories and GitHub Actions' default
    variables (`metis_trace._plain_variables`): none is secret-named,
    and their values, in env, shell and JSON form, are left as written."""
    from metis_runtime._redact import Redactor
    from metis_trace._plain_variables import PLAIN_VARIABLES

    assert {"PWD", "OLDPWD", "HOME", "PATH", "SHELL", "TERM", "LANG", "USER"} <= PLAIN_VARIABLES
    assert {"TMPDIR", "XDG_RUNTIME_DIR", "GITHUB_WORKSPACE"} <= PLAIN_VARIABLES
    assert "GITHUB_TOKEN" not in PLAIN_VARIABLES
    environ = {name: f"/home/alice/{name.lower()}-value" for name in PLAIN_VARIABLES}
    redactor = Redactor(environ)
    assert redactor.values == ()
    for name, value in environ.items():
        assert not secret_name(name), name
        for text in (f"{name}={value}", f'export {name}="{value}"', f"declare -x {name}={value}"):
            assert redactor.text(text) == text, text
        assert redactor.json_line({name: value}) == json.dumps({name: value}, separators=(",", ":"))


def test_a_real_secret_beside_them_is_still_redacted() -> None:
    from metis_runtime._redact import REDACTED
    from metis_runtime._redact import Redactor

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    environ = {"PWD": "/home/alice/proj", "OLDPWD": "/home/alice", "GITHUB_TOKEN": token}
    redactor = Redactor(environ)
    env_dump = "\n".join(f"{k}={v}" for k, v in environ.items())
    out = redactor.text(env_dump)
    assert "PWD=/home/alice/proj" in out and "OLDPWD=/home/alice" in out
    assert token not in out and f"GITHUB_TOKEN={REDACTED}" in out
    line = redactor.json_line({"env": environ, "note": f"token {token}"})
    assert "/home/alice/proj" in line and token not in line
    # A password by another spelling is still one: the exemption is by exact
    # name, the whole name (`MYPWD` was once read as its last word, `PWD`).
    spellings = ("MYSQL_PWD=hunter22secret", "MYPWD=hunter22secret", "DB2PWD=hunter22secret")
    spellings += ("db.PWD=hunter22secret", "spring.datasource.PWD=hunter22secret")
    for text in (*spellings, "pwd: hunter22secret", '{"pwd": "hunter22secret"}'):
        assert "hunter22secret" not in redactor.text(text), text


def test_a_path_variable_after_a_json_escaped_newline_is_not_a_secret() -> None:
    # A child's `env` output, as it stands in a JSON result: `\nPWD=...`. The
    # escape's `n` is no part of the name (it was read as `nPWD`, a secret name).
    from metis_trace import find_credentials

    assert find_credentials(r"env\nPWD=/tmp/ws\nOLDPWD=/tmp\nHOME=/root") == []
    assert [f.family for f in find_credentials(r"env\nDB_PASSWORD=hunter2secret")] == [
        "secret-assignment"
    ]
