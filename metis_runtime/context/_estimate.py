"""A simple token estimate: about four characters per token.

Per block: ⌈characters / 4⌉ of its text (a tool call: its name and its input
as compact JSON; a result: its content; a redacted thinking block: its data;
a server tool's block: its wire JSON), plus 4 per message for the framing
(role, separators). It over-counts code a little and under-counts CJK text;
the budgets are set with that margin (specs/loop.md, context control).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..providers import Block
from ..providers import Message
from ..providers import RedactedThinkingBlock
from ..providers import ServerToolBlock
from ..providers import TextBlock
from ..providers import ThinkingBlock
from ..providers import ToolResultBlock
from ..providers import ToolUseBlock

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4


def _ceil_div(n: int) -> int:
    return -(-n // CHARS_PER_TOKEN)


def block_chars(block: Block) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ThinkingBlock):
        return len(block.thinking) + len(block.signature)
    if isinstance(block, ToolUseBlock):
        args = json.dumps(block.input, separators=(",", ":"), ensure_ascii=False)
        return len(block.name) + len(args)
    if isinstance(block, ToolResultBlock):
        return len(block.content)
    if isinstance(block, RedactedThinkingBlock):
        return len(block.data)
    if isinstance(block, ServerToolBlock):  # e.g. web search results: often large
        return len(json.dumps(block.raw, separators=(",", ":"), ensure_ascii=False))
    return 0  # a block kind this estimate does not know costs nothing


def estimate_tokens(messages: Iterable[Message]) -> int:
    """The estimated prompt tokens of `messages`."""
    return sum(
        MESSAGE_OVERHEAD + sum(_ceil_div(block_chars(b)) for b in m.content) for m in messages
    )
