"""Credential redaction for everything the runtime writes to disk.

Redacted: `sk-...` API keys, GitHub tokens (`ghp_...`, `gho_`, `ghs_`, `ghu_`,
`ghr_`, `github_pat_...`), `Bearer ...` credentials, `NAME=value` where NAME
ends in `_KEY`, `_TOKEN` or `_SECRET` (any case), and the literal values of
such environment variables present when the redactor was built. Values
shorter than `MIN_SECRET_LEN` are not redacted by value: they would hit
ordinary text (they are still caught by the patterns above).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[REDACTED]"
MIN_SECRET_LEN = 6

_SECRET_NAME = re.compile(r"(?i)[A-Z0-9_]*_(?:KEY|TOKEN|SECRET)")
_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}",
    r"\b(?:gh[posur]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})",
    r"(?<=\bBearer )[A-Za-z0-9._~+/=\-]+",
    # NAME=value: keep the name (useful when reading a trace), drop the value.
    r"(?i:(?<=_KEY=)|(?<=_TOKEN=)|(?<=_SECRET=))(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)",
)

# What every pattern above starts with, lower-cased.
_PREFIXES = ("sk-", "ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_", "bearer ")
_NAME_ENDS = ("_key=", "_token=", "_secret=")
_NEEDLES = (*_PREFIXES, *_NAME_ENDS)


# Built once: json.dumps with non-default options builds an encoder per call.
_ENCODE = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


class Redactor:
    """Replaces credentials in strings with `[REDACTED]`.

    Built once per run (the environment is read at construction); `text` and
    `value` are pure afterwards. Strings without a candidate are returned
    unchanged at the cost of one regex scan.
    """

    __slots__ = ("_escaped", "_re")

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        values = sorted(
            {v for k, v in env.items() if _SECRET_NAME.fullmatch(k) and len(v) >= MIN_SECRET_LEN},
            key=len,
            reverse=True,  # longest first, so a value containing another wins
        )
        parts = [*(re.escape(v) for v in values), *_PATTERNS]
        self._re = re.compile("|".join(f"(?:{p})" for p in parts))
        # Each value as it appears inside a JSON string written by `json_line`.
        self._escaped = tuple(json.dumps(v, ensure_ascii=True)[1:-1] for v in values)

    def found_in_json(self, line: str) -> bool:
        """Whether a JSON text may hold something to redact (never a false
        negative for strings inside it; false positives are fine). Literal
        substring tests: an order of magnitude faster than any regex scan,
        a case-blind alternation of the same literals included."""
        low = line.lower()
        for needle in _NEEDLES:  # plain loops: a generator per `any` costs more
            if needle in low:
                return True
        return bool(self._escaped) and any(value in line for value in self._escaped)

    def json_line(self, obj: Any) -> str:
        """`obj` as one line of ASCII JSON, with credentials redacted. ASCII:
        U+2028, U+0085 and the like would end the line for some JSONL readers."""
        line = _ENCODE(obj)
        if self.found_in_json(line):  # rare: only then walk the strings
            line = _ENCODE(self.value(obj))
        return line

    def text(self, s: str) -> str:
        return self._re.sub(REDACTED, s)

    def value(self, obj: Any) -> Any:
        """`obj` (JSON-like: dicts, lists, tuples, strings, scalars) with every
        string redacted; dict keys included. Non-string leaves are kept."""
        if isinstance(obj, str):
            return self._re.sub(REDACTED, obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj
