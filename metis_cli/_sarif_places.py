"""Where a SARIF result is, and what makes it the same finding next time.

GitHub code scanning tracks an alert by its rule and
`partialFingerprints`, and places it by an artifact URI relative to the
repository (https://docs.github.com/en/code-security/reference/code-scanning/sarif-files/sarif-support).
So:

- an artifact's URI is relative to the run's `SRCROOT` (`originalUriBaseIds`,
  SARIF 2.1.0 §3.14.14): `--sarif-root DIR`, else the git repository root
  that holds most of the artifacts. Every path segment is percent-encoded
  (RFC 3986 §2.1: only unreserved characters and `/` stay as they are), so a
  space is `%20`, a `%` is `%25` and the URI passes the schema's
  `uri-reference` format. A file outside the root is an absolute `file:` URI.
- a fingerprint hashes the rule, the path relative to that root (resolved:
  the same for `x.json`, `./x.json` and `/abs/x.json`, from any working
  folder), and what identifies the finding inside the file: the JSON record
  at its line (the call block with its id and tool name, or the JSONL line),
  canonicalised, with its ordinal among the run's findings of the same rule
  on the same content. Never the line number, nor a message that holds one:
  a line inserted above keeps the fingerprint. Where no record can be read
  there (standard input, a run folder) it is the message with every number
  masked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["Places", "git_root"]

SRCROOT = "SRCROOT"
_NUMBER = re.compile(r"\d+")
_NEWLINE = re.compile("\n")  # LF only, as the readers count lines (`input_lines`)


def git_root(path: Path) -> Path | None:
    """The nearest folder at or above `path` holding `.git` (a folder, or a
    worktree's `.git` file), resolved."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _resolved(source: str) -> Path | None:
    if source == "-":
        return None
    try:
        return Path(source).resolve()
    except (OSError, RuntimeError):  # a symlink loop: keep the path as typed
        return Path(os.path.abspath(source))


class Places:
    """Artifact locations and fingerprints for one SARIF run."""

    def __init__(self, sources: Sequence[str], root: Path | None = None) -> None:
        self._paths = {s: _resolved(s) for s in sources}
        if root is None:
            roots = Counter(
                r
                for p in self._paths.values()
                if p is not None and (r := git_root(p if p.is_dir() else p.parent))
            )
            root = roots.most_common(1)[0][0] if roots else None
        self.root = root.resolve() if root is not None else None
        self._texts: dict[str, tuple[str, list[int]] | None] = {}
        self._seen: Counter[tuple[str, str, str]] = Counter()

    def base_ids(self) -> dict[str, Any]:
        """`originalUriBaseIds`: SRCROOT as an absolute URI ending in `/` (§3.14.14)."""
        if self.root is None:
            return {}
        uri = self.root.as_uri()
        return {SRCROOT: {"uri": uri if uri.endswith("/") else uri + "/"}}

    def _relative(self, source: str) -> str | None:
        path = self._paths.get(source)
        if path is None or self.root is None:
            return None
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return None

    def artifact(self, source: str) -> dict[str, Any]:
        """An `artifactLocation`: relative to SRCROOT, else an absolute file URI."""
        relative = self._relative(source)
        if relative is not None:
            return {"uri": quote(os.fsencode(relative), safe="/"), "uriBaseId": SRCROOT}
        path = self._paths.get(source)
        return {"uri": "stdin" if path is None else path.as_uri()}

    def name(self, source: str) -> str:
        """The file's stable name: relative to the root, else resolved (`-` as is)."""
        path = self._paths.get(source)
        return self._relative(source) or (path.as_posix() if path is not None else source)

    def fingerprint(self, rule_id: str, source: str, line: int | None, message: str) -> str:
        """The finding's identity, stable under folder, path spelling and line shifts."""
        where = self.name(source)
        content = self._record(source, line)
        if content is None:
            content = _NUMBER.sub("#", message)
        key = (rule_id, where, content)
        ordinal = self._seen[key]
        self._seen[key] += 1
        parts = (rule_id, where, content, str(ordinal))
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def _record(self, source: str, line: int | None) -> str | None:
        """The JSON value that starts on `line` (a record, a content block),
        canonicalised; the line's own text when it starts no JSON value."""
        loaded = self._text(source)
        if loaded is None or line is None or not 1 <= line <= len(loaded[1]):
            return None
        text, starts = loaded
        end = starts[line] if line < len(starts) else len(text)
        own = text[starts[line - 1] : end]
        at = starts[line - 1] + len(own) - len(own.lstrip())
        if text[at : at + 1] in ("{", "["):
            try:
                value, _ = json.JSONDecoder().raw_decode(text, at)
                return json.dumps(value, sort_keys=True, separators=(",", ":"))
            except ValueError:
                pass
        return own.strip()

    def _text(self, source: str) -> tuple[str, list[int]] | None:
        """The file's text and where each line starts (read once, bounded)."""
        if source not in self._texts:
            from metis_runtime._input import read_input_bytes
            from metis_trace import InputError

            path = self._paths.get(source)
            try:
                data = read_input_bytes(path) if path is not None else None
            except InputError:
                data = None  # a folder, or gone: the masked message identifies it
            if data is None:
                self._texts[source] = None
            else:
                text = data.decode("utf-8", "replace")
                starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
                if starts[-1] == len(text) and len(starts) > 1:
                    starts.pop()  # no line after the last newline
                self._texts[source] = (text, starts)
        return self._texts[source]
