"""What the root agent posted to the provider, checked as the Messages API
reads it (CLOSE-2, CLOSE-3, CLOSE-4), from the request bodies themselves.

In process, the root loop's provider is the replay provider, which keeps the
decoded JSON body of every request it was sent (`ReplayProvider.sent`: the
real Anthropic wire adapter encoded it). The harness writes them to
`sent.jsonl` beside the run's folder (they hold what the model was shown,
credentials included, so they are not among the run's own files that
TRACE-2 scans); this module reads them back. The trace's `results_sent`
event is the runtime's word for what it sent; the body is what the provider
gets. Anthropic's tool-use docs (https://docs.claude.com/en/docs/agents-and-
tools/tool-use/implement-tool-use, "Handling tool use and tool result content
blocks") say that the user message after an assistant message with
`tool_use` blocks must answer each of them with a `tool_result`, and that
in it the `tool_result` blocks come first, any text after them. metis adds
call order (CLOSE-3).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["SENT", "sent_problems", "write_sent"]

SENT = "sent.jsonl"


def write_sent(folder: Path, bodies: Iterable[Mapping[str, Any]]) -> None:
    """Append the request bodies (a resume adds its own)."""
    with (folder / SENT).open("a", encoding="utf-8") as out:
        for body in bodies:
            out.write(json.dumps(body) + "\n")


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, Mapping)]


def _answer_problem(uses: list[str], reply: Mapping[str, Any] | None) -> tuple[str, str] | None:
    if reply is None or reply.get("role") != "user":
        return "CLOSE-2", f"tool_use {uses} has no user message after it"
    blocks = _blocks(reply)
    kinds = [b.get("type") for b in blocks]
    results = [str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
    if any(k != "tool_result" for k in kinds[: len(results)]):
        return "CLOSE-3", f"the tool_result blocks are not first in the user message: {kinds}"
    extra = [r for r in results if r not in uses]
    if extra:
        return "CLOSE-4", f"tool_result {extra} answers no tool_use of the message before"
    if results != uses:
        return "CLOSE-3", f"tool_result ids {results}, the calls were {uses}"
    return None


def _body_problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        uses = [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]
        if not uses:
            continue
        if i + 1 == len(messages):
            return "CLOSE-2", f"the request ends with the calls {uses} unanswered"
        problem = _answer_problem(uses, messages[i + 1])
        if problem is not None:
            return problem[0], f"message {i + 1}: {problem[1]}"
    return None


def sent_problems(folder: Path) -> list[tuple[str, str]]:
    """(ID, message) for the first request whose body breaks the rules."""
    path = folder / SENT
    if not path.is_file():
        return []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            body = json.loads(line)
        except json.JSONDecodeError:
            return [("FORMAT", f"{SENT} line {n}: not JSON")]
        problem = _body_problem(body) if isinstance(body, Mapping) else None
        if problem is not None:
            return [(problem[0], f"request {n} as posted: {problem[1]}")]
    return []
