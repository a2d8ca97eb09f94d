"""The secrets property test: a credential of any family, embedded anywhere in
any field a writer writes (among other lines, JSON-escaped, `\\uXXXX`- or
`\\/`-escaped, CRLF), through the real writers (trace, journal, agent config
and result, inbox, offload, progress and reports on stdout/stderr, a bash
call's cut output), never reaches a file; nor encoded (base64, base64url,
percent-encoded, nested once: a base64 blob holding one never reaches a
file whole or in part); and every file is 0600."""

from __future__ import annotations

import io
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import assume
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._redacting import RedactingStream
from metis_runtime import Journal
from metis_runtime import Redactor
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime._private import append_private
from metis_runtime._private import append_private_jsonl
from metis_runtime._private import default_redactor
from metis_runtime._private import write_private
from metis_runtime._private import write_private_json
from metis_runtime.providers import Message
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.tools._bash import MAX_OUTPUT
from metis_runtime.tools._bash import _Output
from metis_trace import EffectOutcome
from metis_trace import Mode
from tests._credentials import Credential
from tests._credentials import credentials
from tests._credentials import embedded
from tests._credentials import encoded
from tests._credentials import leaked

_ENV_SECRET = "s3rv1ce-t0ken-from-the-environment"
_REDACTOR = Redactor({"ACME_SERVICE_TOKEN": _ENV_SECRET, "PATH": "/usr/bin"})
_ENV_CRED = Credential("environment-value", _ENV_SECRET, _ENV_SECRET)

WRITERS = (
    "trace-result",
    "trace-input",
    "trace-meta",
    "journal-commit",
    "journal-message",
    "journal-admit",
    "config-json",
    "inbox-jsonl",
    "offload",
    "append",
    "stream",
    "bash-cut",
)
# A credential (or the environment's value), one writer, and the sizes of the
# pieces it is written in: what each no-credential-reaches-a-file test draws.
_WRITES: dict[str, st.SearchStrategy[Any]] = {
    "cred": st.one_of(credentials(), st.just(_ENV_CRED)),
    "data": st.data(),
    "writer": st.sampled_from(WRITERS),
    "chunks": st.lists(st.integers(1, 40), min_size=1, max_size=6),
}


def _write(writer: str, text: str, folder: Path, chunks: list[int]) -> Path:
    path = folder / f"{writer}.out"
    r = _REDACTOR
    if writer.startswith("trace-"):
        meta = {"task": text} if writer == "trace-meta" else {}
        trace = TraceWriter(
            path, make_header(mode=Mode.DEFAULT, tools=("bash",), meta=meta), redactor=r
        )
        if writer == "trace-result":
            trace.emit("result", (), occ="1.0", call_id="c", status="ok", content=text)
        elif writer == "trace-input":
            trace.emit("interrupt", (), reason="x", detail={"command": text, "nested": [text]})
        trace.close()
    elif writer.startswith("journal-"):
        journal = Journal.create(path, "r", {"task": text}, fsync=False, redactor=r)
        if writer == "journal-commit":
            journal.commit("1.0", EffectOutcome.OK, text)
        elif writer == "journal-message":
            journal.message(1, "results", Message("user", (ToolResultBlock("t", text),)))
            journal.message(1, "task", Message("user", (TextBlock(text),)))
        else:
            journal.admit("1.0", "c", "bash", {"command": text, "env": {"API_TOKEN": "plain"}})
        journal.close()
    elif writer == "config-json":
        write_private_json(path, {"task": text, "agent": {"env": {"DB_PASSWORD": text}}}, r)
    elif writer == "inbox-jsonl":
        append_private_jsonl(path, {"from": "root", "text": text}, r)
    elif writer == "offload":
        write_private(path, text, r)
    elif writer == "append":
        append_private(path, text, r)
    elif writer == "stream":  # progress and reports, written in arbitrary pieces
        with path.open("w", encoding="utf-8") as fh:
            stream = RedactingStream(fh, r.text)
            pos = 0
            for size in [*chunks, len(text)]:
                stream.write(text[pos : pos + size])
                pos += size
            stream.write("\n")
            stream.flush()
    elif writer == "bash-cut":  # a cut anywhere near the credential, then the trace
        out = _Output()
        filler = "y" * (MAX_OUTPUT // 2 - chunks[0] % 200)
        for piece in (filler, text, "z" * (MAX_OUTPUT // 2 + 5000), text, "w" * (chunks[-1] % 300)):
            out.add(piece.encode("utf-8", "surrogatepass"))
        # The tool cuts with the process's redactor (`default_redactor`), which
        # knows the values of the run's environment: this test's value is one.
        # It is built once per process: another test may have built it first.
        default_redactor.cache_clear()
        try:
            with mock.patch.dict(os.environ, {"ACME_SERVICE_TOKEN": _ENV_SECRET}):
                cut = out.text()
        finally:
            default_redactor.cache_clear()
        trace = TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=("bash",)), redactor=r)
        trace.emit("result", (), occ="1.0", call_id="c", status="ok", content=cut)
        trace.close()
    return path


@settings(max_examples=300)
@given(**_WRITES)
def test_no_credential_reaches_a_file(
    tmp_path_factory: object, cred: Credential, data: st.DataObject, writer: str, chunks: list[int]
) -> None:
    text = data.draw(embedded(cred))
    with _written(writer, text, chunks) as (path, written):
        assert leaked(cred, written) == [], (writer, text, written[:2000])
        if writer != "stream":
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, writer


@contextmanager
def _written(writer: str, text: str, chunks: list[int]) -> Iterator[tuple[Path, str]]:
    """`text` written by `writer` in a fresh folder: the file and what it holds."""
    folder = Path(os.path.realpath(tempfile.mkdtemp(prefix="metis-writers-")))
    try:
        path = _write(writer, text, folder, chunks)
        yield path, path.read_text(encoding="utf-8", errors="surrogateescape")
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


@settings(max_examples=120)
@given(**_WRITES)
def test_no_encoded_credential_reaches_a_file(
    cred: Credential, data: st.DataObject, writer: str, chunks: list[int]
) -> None:
    enc = data.draw(encoded(cred))
    # specs/secrets.md: base64 in base64 only for needles of four characters or more.
    short = {"azure-client-secret", "model-provider-key", "jwt", "basic-auth-url"}
    assume(enc.how != ("base64", "base64") or cred.family not in short)
    with _written(writer, enc.text, chunks) as (_, written):
        assert leaked(cred, written) == [], (writer, enc.text, written[:2000])
        if enc.how[0] != "percent":  # a base64 blob holding a credential goes whole
            pieces = [enc.blob[i : i + 12] for i in range(0, len(enc.blob) - 12, 6)]
            assert [p for p in pieces if p in written] == [], (writer, enc.text, written[:2000])


def test_a_stream_holds_a_key_block_until_its_end() -> None:
    buf = io.StringIO()
    stream = RedactingStream(buf)  # type: ignore[arg-type]
    stream.write("before\n-----BEGIN OPENSSH PRIVATE KEY-----\n")
    stream.write("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n")
    assert buf.getvalue() == "before\n"  # the block is held
    stream.write("-----END OPENSSH PRIVATE KEY-----\nafter\n")
    assert buf.getvalue() == "before\n[REDACTED]\nafter\n"


def test_a_stream_holds_a_key_block_whose_armour_is_json_escaped() -> None:
    """`\\u002d----BEGIN` (a JSON-escaped dash, as in printed JSON): the block is
    still held to its END line, so its first body line is not written alone
    (found by the property test above under the dev profile, seed 2)."""
    buf = io.StringIO()
    stream = RedactingStream(buf)  # type: ignore[arg-type]
    stream.write(" \\u002d----BEGIN PRIVATE KEY-----\n")
    stream.write("MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBANGG1CwPxfRKNs8f\n")
    assert buf.getvalue() == ""  # held
    stream.write("-----END PRIVATE KEY-----\n")
    stream.flush()
    assert "MIICdw" not in buf.getvalue() and "[REDACTED]" in buf.getvalue(), buf.getvalue()


def test_private_files_and_folders_are_0600_and_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        write_private(tmp_path / "a" / "b" / "f.txt", "x")
        append_private(tmp_path / "a" / "g.txt", "y")
    finally:
        os.umask(old)
    old = os.umask(0o277)  # would leave a file read-only for its owner
    try:
        write_private_json(tmp_path / "c" / "h.json", {"k": 1})
    finally:
        os.umask(old)
    for p in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "c"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    for p in (tmp_path / "a" / "b" / "f.txt", tmp_path / "a" / "g.txt", tmp_path / "c" / "h.json"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_the_streams_prefilter_copies_the_detectors_needles() -> None:
    from metis_cli import _redacting
    from metis_trace import NAME_WORDS
    from metis_trace import RULE_NEEDLES

    assert _redacting.RULE_NEEDLES == RULE_NEEDLES
    assert _redacting.NAME_WORDS == NAME_WORDS


@given(cred=credentials())
def test_the_streams_prefilter_never_misses(cred: Credential) -> None:
    from metis_cli._redacting import _may_hold

    assert _may_hold(f"x {cred.text} y")
