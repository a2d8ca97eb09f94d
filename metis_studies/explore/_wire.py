"""What the root agent posted to the provider, checked as the provider reads
it, from the request bodies themselves.

In process, the root loop's provider is the replay provider, which keeps the
decoded JSON body of every request it was sent (`ReplayProvider.sent`: the
real wire adapter encoded it). The harness writes them to `sent.jsonl`
beside the run's folder (they hold what the model was shown, credentials
included, so they are not among the run's own files that TRACE-2 scans);
this module reads them back. The trace's `results_sent` event is the
runtime's word for what it sent; the body is what the provider gets.

Each body goes through `metis_check.transcripts` as an Anthropic request
(the provider rules ANT-1..8 under CLOSE-1, -2, -4, -6, -7, -9;
specs/closure.md), and the results' order is checked too (CLOSE-3: call
order, which real transcripts need not keep); a body with `input` items (a
workload on the Responses wire) as a Responses request (OAR-1..6: OAR-6 is
a strict provider's rule, which metis holds its own posts to). One exception: where the
workload's own script repeats a call id (the `repeated-ids` situation), the
runtime echoes it, which CLOSE-1, -7 and -9 name for what it is; metis
pairs by occurrence (specs/closure.md), so those rules are not held against
that id.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from typing import Literal

from metis_check.transcripts import TranscriptFormatError
from metis_check.transcripts import check_transcript

__all__ = ["SENT", "blocks_of", "sent_bodies", "sent_problems", "write_sent"]

SENT = "sent.jsonl"
_ECHOED = ("CLOSE-1", "CLOSE-7", "CLOSE-9")  # what a repeated id breaks


def write_sent(folder: Path, bodies: Iterable[Mapping[str, Any]]) -> None:
    """Append the request bodies (a resume adds its own)."""
    with (folder / SENT).open("a", encoding="utf-8") as out:
        for body in bodies:
            out.write(json.dumps(body) + "\n")


def sent_bodies(folder: Path) -> list[Mapping[str, Any]]:
    """The request bodies kept beside a run's folder (one that is not a JSON
    object is left out: `sent_problems` reports it)."""
    path = folder / SENT
    out = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else ():
        try:
            body = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(body, Mapping):
            out.append(body)
    return out


def blocks_of(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A message's content blocks (none for a plain-text content)."""
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _order_problem(body: Mapping[str, Any]) -> str | None:
    """CLOSE-3: each results message answers its calls in call order."""
    messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
    for i, (call, reply) in enumerate(itertools.pairwise(messages)):
        uses = [str(b.get("id")) for b in blocks_of(call) if b.get("type") == "tool_use"]
        answers = [
            str(b.get("tool_use_id")) for b in blocks_of(reply) if b.get("type") == "tool_result"
        ]
        if call.get("role") == "assistant" and uses and answers and answers != uses:
            return f"message {i + 1}: tool_result ids {answers}, the calls were {uses}"
    return None


def sent_problems(folder: Path, repeated: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(ID, message) for the first request whose body breaks a rule;
    `repeated`: call ids the workload's own script repeats."""
    path = folder / SENT
    if not path.is_file():
        return []
    echoed = set(repeated)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            body = json.loads(line)
            responses = isinstance(body, Mapping) and "input" in body
            wire: Literal["anthropic", "openai-responses"] = (
                "openai-responses" if responses else "anthropic"
            )
            # strict: what every provider of the wire accepts (the runtime may
            # be pointed at any of them)
            report = check_transcript([line], wire, source=f"{SENT} request {n}", strict=True)
        except (json.JSONDecodeError, TranscriptFormatError) as exc:
            return [("FORMAT", f"{SENT} line {n}: {exc}")]
        for v in report.violations:
            if v.invariant in _ECHOED and any(f"'{i}'" in v.message for i in echoed):
                continue
            return [(v.invariant, f"request {n} as posted: {v.rule} {v.message}".strip())]
        order = _order_problem(body) if wire == "anthropic" else None
        if order is not None:
            return [("CLOSE-3", f"request {n} as posted: {order}")]
    return []
