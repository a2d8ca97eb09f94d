"""Shared helpers of the provider tests: recorded bodies and the stream-shape check.

(Named test_*.py so it sits under the provider tests' path; it has no tests.)
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
from collections.abc import AsyncIterator, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from metis_runtime.providers import (
    AssistantMessage,
    BlockFinished,
    BlockStarted,
    MessageComplete,
    StreamEvent,
    StreamRepaired,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolArgsDelta,
    ToolUseBlock,
    WireNormalizer,
    parse_sse,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "streams"
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@functools.cache
def _load(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DATA / rel).read_text(encoding="utf-8"))
    return data


def cassette(rel: str) -> dict[str, Any]:
    return copy.deepcopy(_load(rel))


def body(rel: str, interaction: int = 0) -> str:
    text: str = _load(rel)["interactions"][interaction]["response"]["body"]["string"]
    return text


ANTHROPIC_TOOL = "anthropic/test_anthropic_local_shell_toolset_stream.yaml"
ANTHROPIC_EDITOR = "anthropic/test_anthropic_text_editor_toolset_stream.yaml"
ANTHROPIC_THINKING = "anthropic/test_anthropic_model_thinking_part_stream.yaml"
ANTHROPIC_MCP = "anthropic/test_anthropic_mcp_servers_stream.yaml"
ANTHROPIC_WEB = "anthropic/test_anthropic_web_search_tool_stream.yaml"
CHAT = "openai-chat/test_run_stream_sync_streams_real_model.yaml"
RESPONSES = "openai-responses/test_openai_responses_stream.yaml"
RESPONSES_PHASE = "openai-responses/test_openai_responses_phase_streamed_on_part_start.yaml"
RESPONSES_USAGE = "openai-responses/test_openai_responses_streaming_usage.yaml"


def data_lines(sse_body: str) -> list[dict[str, Any]]:
    """The JSON payloads of a body, in order ([DONE] left out)."""
    return [json.loads(e.data) for e in parse_sse(sse_body) if e.data != "[DONE]"]


def to_sse(events: Iterable[dict[str, Any]], *, named: bool = True, done: bool = False) -> str:
    """Re-encode payloads as an SSE body (event names from `type` when `named`)."""
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named and "type" in event else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out)


def normalize(normalizer: WireNormalizer, sse_body: str) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    for sse in parse_sse(sse_body):
        events.extend(normalizer.feed_sse(sse))
    events.extend(normalizer.finish())
    return events


async def drain(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


def check_stream(events: list[StreamEvent]) -> AssistantMessage:
    """Assert the stream contract and return the message.

    Exactly one MessageComplete, last; blocks start in index order 0..n-1, each
    finishes once; deltas fall inside their block and add up to the finished
    block; repair events match `message.repairs`.
    """
    assert events, "empty stream"
    completes = [e for e in events if isinstance(e, MessageComplete)]
    assert len(completes) == 1 and events[-1] is completes[0]
    message = completes[0].message
    open_blocks: dict[int, list[str]] = {}
    started: list[int] = []
    finished: dict[int, Any] = {}
    notes = []
    # Responses sends final arguments too; when they disagree they win (with a note).
    differ = any("streamed arguments differ" in n.problem for n in message.repairs)
    for event in events[:-1]:
        if isinstance(event, BlockStarted):
            assert event.index == len(started), "blocks must start in index order"
            started.append(event.index)
            open_blocks[event.index] = []
            block = message.blocks[event.index]
            assert event.block_kind == block.kind
            if isinstance(block, ToolUseBlock):
                assert (event.tool_use_id, event.tool_name) == (block.id, block.name)
        elif isinstance(event, TextDelta | ThinkingDelta | ToolArgsDelta):
            assert event.index in open_blocks, f"delta outside block {event.index}"
            open_blocks[event.index].append(
                event.partial_json if isinstance(event, ToolArgsDelta) else event.text
            )
        elif isinstance(event, BlockFinished):
            assert event.index in open_blocks, "finish without start"
            parts = "".join(open_blocks.pop(event.index))
            finished[event.index] = event.block
            block = event.block
            if isinstance(block, TextBlock):
                assert parts == block.text
            elif isinstance(block, ThinkingBlock):
                assert parts == block.thinking
            elif block.input_error is None and parts.strip() and not differ:
                assert json.loads(parts) == block.input
        elif isinstance(event, StreamRepaired):
            notes.append(event.note)
    assert not open_blocks, f"blocks never finished: {sorted(open_blocks)}"
    assert tuple(finished[i] for i in range(len(finished))) == message.blocks
    assert tuple(notes) == message.repairs
    return message
