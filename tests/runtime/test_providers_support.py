"""Shared helpers of the provider tests: recorded bodies and the stream-shape check.

(Named test_*.py so it sits under the provider tests' path; it has no tests.)
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
from collections.abc import AsyncIterator
from collections.abc import Coroutine
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from typing import TypeVar

import yaml

from metis_runtime.providers import AssistantMessage
from metis_runtime.providers import BlockFinished
from metis_runtime.providers import BlockStarted
from metis_runtime.providers import MessageComplete
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ServerToolBlock
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import StreamRepaired
from metis_runtime.providers import TextBlock
from metis_runtime.providers import TextDelta
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ThinkingDelta
from metis_runtime.providers import ToolArgsDelta
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import WireNormalizer
from metis_runtime.providers import parse_sse

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


def web_search_blocks(encrypted: str) -> tuple[ServerToolBlock, ServerToolBlock]:
    """A server-side web search as the Anthropic API sends it, the call and
    its result (whose page is `encrypted`): opaque blocks, kept as they came."""
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
           "input": {"query": "q"}, "caller": {"type": "direct"}}  # fmt: skip
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
              "content": [{"type": "web_search_result", "url": "https://x", "title": "X",
                           "encrypted_content": encrypted, "page_age": None}]}  # fmt: skip
    return ServerToolBlock(use), ServerToolBlock(result)


async def drain(stream: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    return [event async for event in stream]


async def drain_into(seen: list[StreamEvent], stream: AsyncIterator[StreamEvent]) -> None:
    """Append the stream's events to `seen` as they come: what a caller had
    when the stream raised."""
    async for event in stream:
        seen.append(event)


def check_stream(events: list[StreamEvent]) -> AssistantMessage:
    """Assert the stream contract and return the message.

    Exactly one MessageComplete, last; blocks start in index order 0..n-1, each
    finishes once; deltas fall inside their block and add up to the finished
    block (opaque blocks have none); repair events match `message.repairs`.
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
            elif isinstance(block, RedactedThinkingBlock | ServerToolBlock):
                assert parts == "", "opaque blocks stream no deltas"
            elif block.input_error is None and parts.strip() and not differ:
                assert json.loads(parts) == block.input
        elif isinstance(event, StreamRepaired):
            notes.append(event.note)
    assert not open_blocks, f"blocks never finished: {sorted(open_blocks)}"
    assert tuple(finished[i] for i in range(len(finished))) == message.blocks
    assert tuple(notes) == message.repairs
    return message


# --- a thinking + redacted_thinking + tool_use stream -----------------------------------
# No recorded body of ours has a redacted_thinking block (the API sends one when
# a safety system encrypts part of the thinking), so this one follows the wire
# shape of the recorded thinking and tool streams: the block comes whole in its
# content_block_start, `{"type": "redacted_thinking", "data": ...}`, with no deltas.

REDACTED_MSG_ID = "msg_01KmRv7fPq3RkL7nYtXz9wQd"
REDACTED_TOOL_ID = "toolu_01D7FLrfh4GYq7yT1ULFeyMV"
REDACTED_SIGNATURE = (
    "EqQBCkYIBxgCIkB1Mq6W4yRmQmH3l0bC1xv8nLhQ2b9kq0rjV7aKq1Jk0pG3Xq1Yw8y1Jv3Zb2c4u6d8"
    "EgyV5s6kR3n2m1q0p9oaDE9mV1zQy2xw3t4u5iIwR1kq7c9y0b3Zl5m7n9p1r3t5v7x9z1b3d5f7h9j1"
)
REDACTED_DATA = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4"
    "mPnZ5sQ7vB5URj2pLmN3kF8/dW5hR7xJ0aP3oLQ+9Wq2c4bV6nK1tY8eZs0Hd3fG5jM7pR2wU4x=="
)


def redacted_thinking_events() -> list[dict[str, Any]]:
    def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    def delta(index: int, **fields: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": fields}

    def stop(index: int) -> dict[str, Any]:
        return {"type": "content_block_stop", "index": index}

    return [
        {
            "type": "message_start",
            "message": {
                "model": "claude-sonnet-4-5-20250929",
                "id": REDACTED_MSG_ID,
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 1024,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 3,
                },
            },
        },
        start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        {"type": "ping"},
        delta(0, type="thinking_delta", thinking="The user wants the files listed."),
        delta(0, type="thinking_delta", thinking=" I should call ls."),
        delta(0, type="signature_delta", signature=REDACTED_SIGNATURE),
        stop(0),
        start(1, {"type": "redacted_thinking", "data": REDACTED_DATA}),
        stop(1),
        start(2, {"type": "text", "text": ""}),
        delta(2, type="text_delta", text="Listing the workspace."),
        stop(2),
        start(3, {"type": "tool_use", "id": REDACTED_TOOL_ID, "name": "ls", "input": {}}),
        delta(3, type="input_json_delta", partial_json=""),
        delta(3, type="input_json_delta", partial_json='{"path": "'),
        delta(3, type="input_json_delta", partial_json='."}'),
        stop(3),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 187},
        },
        {"type": "message_stop"},
    ]


def redacted_thinking_body() -> str:
    return to_sse(redacted_thinking_events())


# The assistant content the next Anthropic request must carry for that stream:
# every block unchanged and in order.
REDACTED_NEXT_CONTENT: list[dict[str, Any]] = [
    {
        "type": "thinking",
        "thinking": "The user wants the files listed. I should call ls.",
        "signature": REDACTED_SIGNATURE,
    },
    {"type": "redacted_thinking", "data": REDACTED_DATA},
    {"type": "text", "text": "Listing the workspace."},
    {"type": "tool_use", "id": REDACTED_TOOL_ID, "name": "ls", "input": {"path": "."}},
]


def anthropic_wire_blocks(sse_body: str) -> list[dict[str, Any]]:
    """The content blocks of a recorded Anthropic stream, accumulated the way the
    API documents it (deltas appended, a tool's input JSON parsed at the end),
    empty text blocks left out: what an assistant turn sends back."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    for event in data_lines(sse_body):
        if event["type"] == "content_block_start":
            blocks[event["index"]] = copy.deepcopy(event["content_block"])
        elif event["type"] == "content_block_delta":
            block, change = blocks[event["index"]], event["delta"]
            if change["type"] == "text_delta":
                block["text"] += change["text"]
            elif change["type"] == "thinking_delta":
                block["thinking"] += change["thinking"]
            elif change["type"] == "signature_delta":
                block["signature"] += change["signature"]
            elif change["type"] == "input_json_delta":
                inputs[event["index"]] = inputs.get(event["index"], "") + change["partial_json"]
    for index, raw in inputs.items():
        if raw:
            blocks[index]["input"] = json.loads(raw)
    out = []
    for index in sorted(blocks):
        block = blocks[index]
        if block["type"] == "text":
            if not block["text"]:
                continue
            block = {"type": "text", "text": block["text"]}  # citations are not kept
        out.append(block)
    return out
