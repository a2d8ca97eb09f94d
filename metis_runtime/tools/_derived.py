"""Footprints redacted after they are derived (TRACE-2, specs/secrets.md).

A tool derives a call's footprint from its arguments: `cat
https://user:pass@host/x` names the path `<workspace>/https:/user:pass@host/x`,
where the path normalisation folded the URL's `//` (issue 24: the password
reached the trace, which the detector's `://` rule no longer saw). So the
footprint is redacted twice, after derivation and in addition to the raw
arguments the trace writer redacts: every credential found in the raw
arguments (where the URL is still whole) is cut out of each derived path
wherever its value survives, and each path is then scanned by itself.

The redacted footprint is the one the trace records and the scheduler uses:
redaction maps equal paths to equal paths and keeps one path below another,
so an overlap is never lost (two paths differing only in a secret may then
overlap: a conservative extra ordering). The gate decides on the real paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from metis_trace import find_credentials
from metis_trace import may_hold_credential
from metis_trace import redact_credentials

from ._base import Classification

__all__ = ["redact_footprint"]

_REDACTED = "[REDACTED]"  # as the trace writer writes it (metis_runtime._redact.REDACTED)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _raw_secrets(call_input: Any) -> list[str]:
    """The credentials in a call's raw arguments, longest first."""
    found: set[str] = set()
    for text in _strings(call_input):
        if may_hold_credential(json.dumps(text)):
            found.update(text[f.start : f.end] for f in find_credentials(text))
    return sorted(found, key=len, reverse=True)


def _redacted(paths: tuple[Path, ...], secrets: list[str]) -> tuple[Path, ...]:
    out = []
    for path in paths:
        text = str(path)
        for secret in secrets:
            text = text.replace(secret, _REDACTED)
        if may_hold_credential(json.dumps(text)):
            text = redact_credentials(text, _REDACTED)
        out.append(Path(text))
    return tuple(out)


def redact_footprint(classification: Classification, call_input: Any) -> Classification:
    """`classification` with its footprint's paths redacted (module doc);
    itself when nothing changed."""
    reads, writes = classification.footprint()
    if not reads and not writes:
        return classification
    secrets = _raw_secrets(call_input)
    new_reads, new_writes = _redacted(reads, secrets), _redacted(writes, secrets)
    if (new_reads, new_writes) == (reads, writes):
        return classification
    return attrs.evolve(classification, reads=new_reads, writes=new_writes)
