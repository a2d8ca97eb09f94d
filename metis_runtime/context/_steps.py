"""The steps of the context ladder over neutral messages, and provider validity.

This is the runtime's own reading of specs/loop.md (context control); it does
not share code with `metis_model._context`, and tests hold the two equal.
Each step returns new messages and what it removed, as positions: a removed
call is `(message index, call index)`, i.e. its place among the tool_use
blocks of its assistant message; a removed result is named by the position
of the call it answered (the k-th result with id x answers the k-th call
with id x of the message before).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections import defaultdict
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from .._private import default_redactor
from .._private import write_private
from ..providers import Block
from ..providers import Message
from ..providers import TextBlock
from ..providers import ThinkingBlock
from ..providers import ToolResultBlock
from ..providers import ToolUseBlock

Position = tuple[int, int]

PRUNED_PLACEHOLDER = "[earlier reasoning pruned to save context]"


@frozen
class StepOutput:
    messages: tuple[Message, ...]
    taken: bool
    calls_removed: tuple[Position, ...] = ()
    results_removed: tuple[Position, ...] = ()
    detail: str = ""


def _same(messages: Sequence[Message]) -> StepOutput:
    return StepOutput(tuple(messages), False)


def transcript_problem(messages: Sequence[Message]) -> str | None:
    """The first reason a provider would reject `messages`, or None.

    Starts with a user message; roles alternate; no message is empty; results
    come first in their user message; each assistant message's calls are
    answered by exactly the results of the next message (same multiset of
    ids), and a user message holds no result its predecessor did not ask for.
    """
    if not messages:
        return "no messages"
    if messages[0].role != "user":
        return "message 0: not a user message"
    for i, m in enumerate(messages):
        if i and m.role == messages[i - 1].role:
            return f"message {i}: a second {m.role} message in a row"
        if not m.content:
            return f"message {i}: empty"
        if m.role == "assistant":
            calls = Counter(b.id for b in m.content if isinstance(b, ToolUseBlock))
            if calls and i + 1 >= len(messages):
                return f"message {i}: tool calls {sorted(calls)} have no results"
            continue
        flags = [isinstance(b, ToolResultBlock) for b in m.content]
        if any(flags[flags.index(False) :] if False in flags else ()):
            return f"message {i}: a tool_result after other content"
        asked: Counter[str] = Counter()
        if i:
            asked = Counter(b.id for b in messages[i - 1].content if isinstance(b, ToolUseBlock))
        got = Counter(b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock))
        if got != asked:
            return (
                f"message {i}: results for {sorted(got.elements())} answer "
                f"calls {sorted(asked.elements())}"
            )
    return None


def _old(messages: Sequence[Message], recent: int) -> int:
    return max(0, len(messages) - max(recent, 0))


def _rewrite(
    messages: Sequence[Message],
    cut: int,
    role: str,
    rewrite: Callable[[Message], tuple[Message, int]],
    detail: Callable[[int], str],
) -> StepOutput:
    """Each `role` message before `cut` as `rewrite` makes it (the message and
    how many of its blocks changed); `detail` of that count, or no step when
    nothing changed."""
    out: list[Message] = []
    n = 0
    for i, m in enumerate(messages):
        if i >= cut or m.role != role:
            out.append(m)
            continue
        rewritten, changed = rewrite(m)
        out.append(rewritten)
        n += changed
    if not n:
        return _same(messages)
    return StepOutput(tuple(out), True, detail=detail(n))


def _results(
    messages: Sequence[Message],
    cut: int,
    replace: Callable[[ToolResultBlock], str | None],
    detail: Callable[[int], str],
) -> StepOutput:
    """Each tool result before `cut` with the content `replace` gives it (None: kept)."""

    def rewrite(m: Message) -> tuple[Message, int]:
        blocks: list[Block] = []
        n = 0
        for b in m.content:
            if isinstance(b, ToolResultBlock) and (content := replace(b)) is not None:
                b = ToolResultBlock(b.tool_use_id, content, b.is_error)
                n += 1
            blocks.append(b)
        return Message(m.role, tuple(blocks)), n

    return _rewrite(messages, cut, "user", rewrite, detail)


def prune(messages: Sequence[Message], recent: int) -> StepOutput:
    """Drop thinking blocks of messages before the last `recent`.

    The neutral message types carry no images, so only thinking is pruned. A
    message left empty keeps a placeholder text (an empty message is invalid).
    """

    def rewrite(m: Message) -> tuple[Message, int]:
        kept: tuple[Block, ...] = tuple(b for b in m.content if not isinstance(b, ThinkingBlock))
        return Message(m.role, kept or (TextBlock(PRUNED_PLACEHOLDER),)), len(m.content) - len(kept)

    return _rewrite(
        messages,
        _old(messages, recent),
        "assistant",
        rewrite,
        lambda n: f"{n} thinking block(s) pruned",
    )


def snipped(content: str, limit: int) -> str:
    """Head and tail of `content`, with a marker saying how much was cut."""
    head, tail = limit * 2 // 3, limit // 3
    cut = len(content) - head - tail
    return f"{content[:head]}\n[... {cut} characters snipped ...]\n{content[len(content) - tail :]}"


def snip(messages: Sequence[Message], recent: int, limit: int) -> StepOutput:
    """Truncate tool results longer than `limit` characters in old messages."""

    def replace(b: ToolResultBlock) -> str | None:
        # +64: the marker itself must not make a result longer.
        return snipped(b.content, limit) if len(b.content) > limit + 64 else None

    return _results(
        messages,
        _old(messages, recent),
        replace,
        lambda n: f"{n} result(s) snipped to {limit} characters",
    )


def offload(
    messages: Sequence[Message], threshold: int, directory: Path, preview: int = 400
) -> StepOutput:
    """Write each result longer than `threshold` to a file in `directory` and
    keep a reference and a preview. Files are named by content hash, so a
    result offloaded twice is written once."""

    def replace(b: ToolResultBlock) -> str | None:
        if len(b.content) <= threshold:
            return None
        path = _spill(directory, b.content)
        return (
            f"[result offloaded: {len(b.content)} characters saved to {path}; "
            f"read that file for the rest]\n{default_redactor().cut(b.content, preview)}"
        )

    return _results(
        messages, len(messages), replace, lambda n: f"{n} result(s) offloaded to {directory}"
    )


def _spill(directory: Path, content: str) -> Path:
    digest = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    path = directory / f"result-{digest}.txt"
    if not path.exists():
        # Whole file or none, even if two agents spill at once; redacted, 0600.
        write_private(path, content)
    return path


def cut_points(messages: Sequence[Message]) -> tuple[int, ...]:
    """Where a fold may cut: right before an assistant message. A call and its
    results sit in adjacent (assistant, user) messages, so they stay together."""
    return tuple(k for k in range(1, len(messages)) if messages[k].role == "assistant")


def fold_point(messages: Sequence[Message], keep: int) -> int | None:
    """The latest cut point that keeps at least `keep` (>= 1) trailing messages
    and folds at least one turn (k > 1: folding the first message alone is no gain)."""
    points = [k for k in cut_points(messages) if k > 1 and len(messages) - k >= max(keep, 1)]
    return points[-1] if points else None


def _removed(
    messages: Sequence[Message], k: int
) -> tuple[tuple[Position, ...], tuple[Position, ...]]:
    calls: list[Position] = []
    results: list[Position] = []
    for i, m in enumerate(messages[:k]):
        if m.role == "assistant":
            uses = [b for b in m.content if isinstance(b, ToolUseBlock)]
            calls += [(i, j) for j in range(len(uses))]
            continue
        pending: defaultdict[str, list[Position]] = defaultdict(list)
        if i:
            uses = [b for b in messages[i - 1].content if isinstance(b, ToolUseBlock)]
            for j, u in enumerate(uses):
                pending[u.id].append((i - 1, j))
        for b in m.content:
            # A result answering nothing has no position; transcripts the
            # loop builds have none (transcript_problem would say so).
            if isinstance(b, ToolResultBlock) and pending[b.tool_use_id]:
                results.append(pending[b.tool_use_id].pop(0))
    return tuple(calls), tuple(results)


def fold(messages: Sequence[Message], k: int, summary: str) -> StepOutput:
    """Replace messages[:k] by one user message holding `summary`. `k` must
    be a cut point (ValueError otherwise: cutting elsewhere splits calls
    from their results)."""
    if k not in cut_points(messages):
        raise ValueError(f"fold at {k}: not right before an assistant message")
    calls, results = _removed(messages, k)
    out = (Message.user(summary), *messages[k:])
    return StepOutput(out, True, calls, results, detail=f"{k} message(s) folded")


def digest(messages: Sequence[Message], k: int) -> str:
    """The mechanical summary of messages[:k]: the task, the tools called,
    the last thing the assistant said."""
    task = "\n".join(b.text for b in messages[0].content if isinstance(b, TextBlock)).strip()
    tools: Counter[str] = Counter()
    said = ""
    turns = 0
    for m in messages[:k]:
        if m.role == "assistant":
            turns += 1
            tools.update(b.name for b in m.content if isinstance(b, ToolUseBlock))
            text = " ".join(b.text for b in m.content if isinstance(b, TextBlock)).strip()
            said = text or said
    used = ", ".join(f"{name} x{n}" for name, n in sorted(tools.items())) or "none"
    lines = [
        task,
        "",
        f"[{turns} earlier turn(s) were folded to save context. Tools called: {used}.]",
    ]
    if said:
        lines.append(f"[The last thing you said then: {' '.join(said.split())[:500]}]")
    return "\n".join(lines).strip()
