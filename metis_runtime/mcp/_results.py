"""An MCP `CallToolResult` as the provider's tool result (text, error flag).

- text content: the text, blocks joined by a newline;
- structured content: its JSON when no text block is there (the spec asks a
  server that sends structured content to send its JSON as text too);
- images, audio, resource links and blob resources: kept as one-line
  references (type, MIME type, size, SHA-256, URI), never inlined as base64;
- an embedded text resource: a reference line, then its text;
- `isError`: an error result.

The text is cut at `MAX_MCP_OUTPUT_TOKENS` (as Claude Code, about four
characters a token; default 25000 tokens), never inside a credential.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from typing import Any

from ..tools import ToolOutput

OUTPUT_TOKENS_ENV = "MAX_MCP_OUTPUT_TOKENS"
DEFAULT_OUTPUT_TOKENS = 25_000
_CHARS_PER_TOKEN = 4


def output_limit(environ: os._Environ[str] | dict[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    raw = env.get(OUTPUT_TOKENS_ENV, "")
    try:
        tokens = int(raw) if raw else DEFAULT_OUTPUT_TOKENS
    except ValueError:
        tokens = DEFAULT_OUTPUT_TOKENS
    return max(tokens, 1) * _CHARS_PER_TOKEN


def _digest(data: str) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"{len(data)} characters, not valid base64"
    return f"{len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:16]}"


def _block(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_digest(block.data)}; not shown]"
    if kind == "resource_link":
        mime = f", {block.mime_type}" if getattr(block, "mime_type", None) else ""
        return f"[resource link {block.uri} ({block.name}{mime})]"
    if kind == "resource":
        res = block.resource
        mime = f", {res.mime_type}" if getattr(res, "mime_type", None) else ""
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return f"[resource {res.uri}{mime}, {len(text)} characters]\n{text}"
        return f"[resource {res.uri}{mime}, {_digest(getattr(res, 'blob', ''))}; not shown]"
    return f"[{kind or 'unknown'} content; not shown]"


def to_output(result: Any, limit: int | None = None) -> ToolOutput:
    """The provider's view of an SDK `CallToolResult`."""
    from .._private import default_redactor

    blocks = list(result.content or ())
    parts = [_block(b) for b in blocks]
    structured = result.structured_content
    if structured is not None and not any(getattr(b, "type", None) == "text" for b in blocks):
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text = "\n".join(parts)
    cap = output_limit() if limit is None else limit
    if len(text) > cap:
        kept = default_redactor().head(text, cap)
        text = f"{kept}\n[output cut at {cap} characters of {len(text)} ({OUTPUT_TOKENS_ENV})]"
    return ToolOutput(text, is_error=bool(result.is_error))
