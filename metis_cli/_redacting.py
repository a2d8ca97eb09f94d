"""Standard output and error with credentials redacted (specs/secrets.md).

`metis` writes progress lines, reports and JSON to stdout and stderr; a
credential in them (read from a trace, a transcript, an error message) would
reach a terminal log or a CI artifact. `redact_standard_streams()` puts a
`RedactingStream` in front of both: text is held until a line ends, each
line is redacted by the shared detector (`find_credentials`), and a private
key block is held whole until its END line (or `HOLD_LIMIT` characters), so
a credential split across writes, or a key across lines, is still found.

Light: the detector is imported on the first line written, never at start
(`metis --version` imports click alone).
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable
from typing import Any
from typing import TextIO

HOLD_LIMIT = 1 << 16  # characters held for an unfinished key block
# A key block's armour lines, found by their words: the dashes before them may
# be JSON-escaped (`\\u002d----BEGIN`), which a literal "-----BEGIN" missed.
_BEGIN = re.compile(r"BEGIN [A-Z0-9 ]*PRIVATE KEY")
_END = re.compile(r"END [A-Z0-9 ]*PRIVATE KEY")


# A prefilter, so that text that cannot hold a credential never loads the
# detector (`metis --version` loads click alone): the detector's needles
# (`metis_trace.RULE_NEEDLES`, `NAME_WORDS`; a test checks that these
# copies equal them) as they appear in plain text, any backslash (an escape),
# what may be encoded (`_ENCODED`), and the values of environment variables
# whose names hold a name word (a superset of the detector's secret-named ones).
RULE_NEEDLES = (
    *("private key", "akia", "asia", "abia", "acca", "a3t", "aws", "aiza", "q~"),
    *("accountkey", "sig=", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glsoat-", "gloas-"),
    *("glimt-", "glagent-", "glffct-", "glsa-", "glwt-", "gr1348941", "xox", "xapp-"),
    *("hooks.slack.com", "_live_", "_test_", "_prod_", "whsec_", "sk-ant-", "sk-"),
    *("gsk_", "hf_", "xai-", "pplx-", "r8_", "eyj", "authorization", "bearer", ":/"),
)
NAME_WORDS = (
    *("password", "passwd", "passphrase", "pass", "pwd", "secret", "token"),
    *("credential", "credentials", "key", "pat", "dsn", "url", "uri", "string"),
)
_AFTER_NAME = ('"', "'", "`", " ", "\t", ":", "=")
_NEEDLES = (*RULE_NEEDLES, *(w + a for w in NAME_WORDS for a in _AFTER_NAME))
_scanner: Any = None
# An encoded credential (specs/secrets.md): a percent-escape, or a run of base64
# characters as long as the shortest the detector decodes.
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}|[A-Za-z0-9+/_-]{16}")


def _env_values() -> tuple[str, ...]:
    return tuple(
        v for k, v in os.environ.items() if len(v) >= 6 and any(w in k.lower() for w in NAME_WORDS)
    )


def _may_hold(text: str) -> bool:
    if "\\" in text:
        return True
    low = text.lower()
    return (
        any(n in low for n in _NEEDLES)
        or _ENCODED.search(text) is not None
        or any(v in text for v in _env_values())
    )


def _redact(text: str) -> str:
    """The shared detector, plus this process's secret environment values."""
    global _scanner
    if not _may_hold(text):
        return text
    from metis_trace import CredentialScanner
    from metis_trace import replace_spans
    from metis_trace import secret_values

    if _scanner is None:
        _scanner = CredentialScanner(secret_values(os.environ))
    return replace_spans(text, _scanner.find(text), "[REDACTED]")


class RedactingStream(io.TextIOBase):
    """A text stream that writes whole lines, redacted, to `target`."""

    def __init__(self, target: TextIO, redact: Callable[[str], str] = _redact) -> None:
        super().__init__()
        self._target = target
        self._redact = redact
        self._held = ""

    @property
    def target(self) -> TextIO:
        return self._target

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")

    def write(self, s: str) -> int:
        self._held += s
        cut = self._ready()
        if cut:
            out, self._held = self._held[:cut], self._held[cut:]
            self._target.write(self._redact(out))
            self._target.flush()
        return len(s)

    def _ready(self) -> int:
        """How much of what is held can go: up to the last line end, unless a
        key block is open there (then up to where it begins, or all of it
        once its END line came or too much is held)."""
        held = self._held
        end = held.rfind("\n") + 1
        if not end:
            return 0
        begins = [m.start() for m in _BEGIN.finditer(held, 0, end)]
        if begins and not _END.search(held, begins[-1]) and len(held) < HOLD_LIMIT:
            return held.rfind("\n", 0, begins[-1]) + 1
        return end

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._target.write(self._redact(held))
        self._target.flush()

    def close(self) -> None:
        self.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def redact_standard_streams() -> None:
    """Put a RedactingStream in front of sys.stdout and sys.stderr (once)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))


def flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, RedactingStream):
            stream.flush()
