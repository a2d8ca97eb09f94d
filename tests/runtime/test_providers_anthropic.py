"""Anthropic Messages SSE: recorded streams, malformed mutations, request bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime._errors import ProviderError
from metis_runtime._errors import StreamFormatError
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import AnthropicSDKProvider
from metis_runtime.providers import BlockFinished
from metis_runtime.providers import BlockStarted
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Message
from metis_runtime.providers import MessageComplete
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ServerToolBlock
from metis_runtime.providers import StreamRepaired
from metis_runtime.providers import TextBlock
from metis_runtime.providers import TextDelta
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolArgsDelta
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolSpec
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import Usage
from metis_runtime.providers import anthropic_request_body
from metis_runtime.providers import complete
from tests.runtime.test_providers_http import Served
from tests.runtime.test_providers_http import sdk_client
from tests.runtime.test_providers_support import ANTHROPIC_EDITOR
from tests.runtime.test_providers_support import ANTHROPIC_MCP
from tests.runtime.test_providers_support import ANTHROPIC_THINKING
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import ANTHROPIC_WEB
from tests.runtime.test_providers_support import REDACTED_DATA
from tests.runtime.test_providers_support import REDACTED_MSG_ID
from tests.runtime.test_providers_support import REDACTED_NEXT_CONTENT
from tests.runtime.test_providers_support import REDACTED_SIGNATURE
from tests.runtime.test_providers_support import REDACTED_TOOL_ID
from tests.runtime.test_providers_support import anthropic_wire_blocks
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import cassette
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import data_lines
from tests.runtime.test_providers_support import drain
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import redacted_thinking_body
from tests.runtime.test_providers_support import redacted_thinking_events
from tests.runtime.test_providers_support import run
from tests.runtime.test_providers_support import to_sse


def run_events(events: list[dict[str, Any]]) -> list[Any]:
    return normalize(AnthropicNormalizer(), to_sse(events))


def message_of(events: list[dict[str, Any]]) -> Any:
    return check_stream(run_events(events))


TOOL_EVENTS = data_lines(body(ANTHROPIC_TOOL))  # message_start, tool_use block 0, ... message_stop
TOOL_ID = "toolu_015Rk6ndKaiXYx9AiJcpUR2H"
MSG_ID = "msg_016qmMxFjrLSYY2paN55KqFC"


def tool_events() -> list[dict[str, Any]]:
    return copy.deepcopy(TOOL_EVENTS)


def find(events: list[dict[str, Any]], kind: str, index: int | None = None) -> int:
    for position, event in enumerate(events):
        if event["type"] == kind and (index is None or event.get("index") == index):
            return position
    raise AssertionError(f"no {kind} event")


# --- recorded streams ----------------------------------------------------------------


def test_recorded_tool_use_stream_becomes_one_tool_block() -> None:
    events = normalize(AnthropicNormalizer(), body(ANTHROPIC_TOOL))
    message = check_stream(events)
    assert message.message_id == MSG_ID
    assert message.blocks == (
        ToolUseBlock(TOOL_ID, "bash", {"command": 'python3 -c "print(2 + 2)"'}),
    )
    assert message.stop_reason == "tool_use"
    assert message.usage == Usage(input_tokens=774, output_tokens=65)
    assert message.repairs == ()
    # The empty first input_json_delta and the ping produce nothing.
    assert [type(e) for e in events] == [
        BlockStarted,
        ToolArgsDelta,
        BlockFinished,
        MessageComplete,
    ]
    assert events[0] == BlockStarted(0, "tool_use", TOOL_ID, "bash")


def test_recorded_text_stream_streams_each_delta() -> None:
    events = normalize(AnthropicNormalizer(), body(ANTHROPIC_TOOL, 1))
    message = check_stream(events)
    assert message.blocks == (TextBlock("The result of **2 + 2 = 4**! 🎉"),)
    assert message.stop_reason == "end_turn"
    assert sum(isinstance(e, TextDelta) for e in events) == 5


def test_recorded_arguments_in_many_pieces_are_joined() -> None:
    message = check_stream(normalize(AnthropicNormalizer(), body(ANTHROPIC_EDITOR)))
    (call,) = message.tool_uses
    assert call.name == "str_replace_based_edit_tool"
    assert call.input == {"command": "view", "path": "/tmp/example.py"}


def test_recorded_thinking_keeps_its_signature() -> None:
    message = check_stream(normalize(AnthropicNormalizer(), body(ANTHROPIC_THINKING)))
    thinking, text = message.blocks
    assert isinstance(thinking, ThinkingBlock) and isinstance(text, TextBlock)
    assert thinking.thinking.startswith("This is a straightforward question")
    assert thinking.signature.startswith("EvMCCkYICxgCKkCHP2cSuEdc")
    assert text.text.startswith("Here are the basic steps")


def test_recorded_mcp_server_tool_is_kept_but_is_not_our_tool_call() -> None:
    events = normalize(AnthropicNormalizer(), body(ANTHROPIC_MCP))
    message = check_stream(events)
    assert [b.kind for b in message.blocks] == ["thinking", "server_tool", "server_tool", "text"]
    assert message.tool_uses == () and message.repairs == ()
    assert not any(isinstance(e, ToolArgsDelta) for e in events)  # its input is no call of ours
    use, result = message.blocks[1], message.blocks[2]
    assert isinstance(use, ServerToolBlock) and isinstance(result, ServerToolBlock)
    assert (use.block_type, result.block_type) == ("mcp_tool_use", "mcp_tool_result")
    assert use.raw["input"] == {
        "repoName": "pydantic/pydantic-ai",
        "question": "What is this repository about? What are its main features and purpose?",
    }
    assert result.raw["tool_use_id"] == use.raw["id"]
    assert [b for b in anthropic_wire_blocks(body(ANTHROPIC_MCP)) if "mcp" in b["type"]] == [
        use.raw,
        result.raw,
    ]


def test_recorded_web_search_keeps_server_blocks_in_order_and_drops_empty_text() -> None:
    events = normalize(AnthropicNormalizer(), body(ANTHROPIC_WEB))
    message = check_stream(events)
    assert message.tool_uses == () and message.repairs == ()
    assert not any(isinstance(e, ToolArgsDelta) for e in events)
    assert [b.kind for b in message.blocks[:5]] == [
        "server_tool",
        "server_tool",
        "text",
        "server_tool",
        "server_tool",
    ]
    assert all(isinstance(b, ServerToolBlock) or b.text for b in message.blocks)  # type: ignore[union-attr]
    server = [b for b in message.blocks if isinstance(b, ServerToolBlock)]
    assert [b.block_type for b in server] == [
        "server_tool_use",
        "web_search_tool_result",
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert server[0].raw["input"] == {"query": "top world news today"}  # the deltas, joined
    assert server[1].raw["tool_use_id"] == server[0].raw["id"]
    assert message.text.startswith("Let me search for more specific breaking news")


def test_web_search_blocks_go_back_verbatim_in_the_next_request() -> None:
    message = check_stream(normalize(AnthropicNormalizer(), body(ANTHROPIC_WEB)))
    request = ModelRequest(
        "", (Message.user("Give me the top 3 news in the world today."), message.to_message())
    )
    sent = anthropic_request_body(request, "claude-sonnet-4-0")["messages"][1]["content"]
    assert sent == anthropic_wire_blocks(body(ANTHROPIC_WEB))
    json.dumps(sent)


PAUSE_TURN = (
    Path(__file__).resolve().parents[3]
    / "shared/corpora/provider-streams/anthropic/test_pause_turn_web_search_streaming_vcr.yaml"
)


@pytest.mark.skipif(not PAUSE_TURN.exists(), reason="../shared/corpora is not present")
def test_recorded_pause_turn_continuation_carries_the_same_blocks() -> None:
    # A real exchange: thinking + server tools ended in pause_turn, and the client
    # sent the turn back. Its recorder re-encoded the search results (no `caller`,
    # retyped quotes in titles), so those are compared with what we received.
    recorded = yaml.safe_load(PAUSE_TURN.read_text(encoding="utf-8"))["interactions"]
    received = recorded[0]["response"]["body"]["string"]
    message = check_stream(normalize(AnthropicNormalizer(), received))
    assert message.stop_reason == "pause_turn" and message.tool_uses == ()
    then = recorded[1]["request"]["parsed_body"]["messages"]
    ours = anthropic_request_body(
        ModelRequest("", (Message.user(then[0]["content"][0]["text"]), message.to_message())), "m"
    )["messages"][1]["content"]
    assert [b["type"] for b in ours] == [b["type"] for b in then[1]["content"]]
    for mine, theirs in zip(ours, then[1]["content"], strict=True):
        if mine["type"] == "web_search_tool_result":
            assert mine["tool_use_id"] == theirs["tool_use_id"]
            assert [r["encrypted_content"] for r in mine["content"]] == [
                r["encrypted_content"] for r in theirs["content"]
            ]
        else:  # thinking with its signature, text, server_tool_use with its input
            assert mine == theirs
    assert ours == anthropic_wire_blocks(received)


def test_redacted_thinking_is_kept_in_order_and_sent_back_unchanged() -> None:
    bodies = [redacted_thinking_body(), body(ANTHROPIC_TOOL, 1)]
    posted: list[dict[str, Any]] = []

    def serve(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        answer = bodies[len(posted) - 1].encode("utf-8")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=answer)

    async def two_turns() -> tuple[list[Any], Any]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
            provider = AnthropicProvider(
                "claude-x", api_key="k", http_client=http, thinking_budget=2000
            )
            first = ModelRequest("", (Message.user("List the files."),))
            events = [e async for e in provider.stream(first)]
            message = check_stream(events)
            results = Message("user", (ToolResultBlock(REDACTED_TOOL_ID, "a.txt\nb.txt"),))
            second = ModelRequest("", (*first.messages, message.to_message(), results))
            return events, await complete(provider, second)

    events, _ = run(two_turns())
    message = check_stream(events)
    assert message.message_id == REDACTED_MSG_ID and message.repairs == ()
    assert message.blocks == (
        ThinkingBlock("The user wants the files listed. I should call ls.", REDACTED_SIGNATURE),
        RedactedThinkingBlock(REDACTED_DATA),
        TextBlock("Listing the workspace."),
        ToolUseBlock(REDACTED_TOOL_ID, "ls", {"path": "."}),
    )
    assert message.tool_uses == (message.blocks[3],)
    assert [e for e in events if isinstance(e, BlockStarted)][1] == BlockStarted(
        1, "redacted_thinking"
    )
    # The second request carries the turn back: thinking with its signature and the
    # redacted block byte for byte, in wire order, before the results.
    assert posted[1]["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert posted[1]["messages"][1] == {"role": "assistant", "content": REDACTED_NEXT_CONTENT}
    assert posted[1]["messages"][1]["content"] == anthropic_wire_blocks(redacted_thinking_body())
    assert posted[1]["messages"][2]["content"][0]["tool_use_id"] == REDACTED_TOOL_ID


def test_redacted_thinking_through_the_sdk_gives_the_same_events() -> None:
    via_httpx = normalize(AnthropicNormalizer(), redacted_thinking_body())
    served = Served(redacted_thinking_body(), chunk=13)
    provider = AnthropicSDKProvider("m", api_key="k", http_client=sdk_client(served), max_retries=0)
    assert run(drain(provider.stream(ModelRequest("", (Message.user("go"),))))) == via_httpx


def test_redacted_thinking_without_data_is_skipped_with_a_note() -> None:
    events = redacted_thinking_events()
    events[find(events, "content_block_start", 1)]["content_block"] = {"type": "redacted_thinking"}
    message = message_of(events)
    assert [b.kind for b in message.blocks] == ["thinking", "text", "tool_use"]
    (note,) = message.repairs
    assert (note.problem, note.repair) == ("redacted_thinking block 1 has no data", "skipped it")


def test_deltas_for_opaque_blocks_are_ignored_and_bad_server_input_is_noted() -> None:
    events = [
        e
        for e in redacted_thinking_events()
        if e["type"] not in ("content_block_start", "content_block_delta", "content_block_stop")
    ]
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    events[1:1] = [
        {"type": "content_block_start", "index": 0, "content_block": use},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"query": '}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "citations_delta", "citation": {}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "redacted_thinking", "data": "abc"}},
        {"type": "content_block_delta", "index": 1,
         "delta": {"type": "thinking_delta", "thinking": "x"}},
        {"type": "content_block_stop", "index": 1},
    ]  # fmt: skip
    message = message_of(events)
    assert message.blocks == (ServerToolBlock(use), RedactedThinkingBlock("abc"))
    assert message.tool_uses == ()
    (note,) = message.repairs
    assert note.problem == "block 0 (server_tool_use): streamed input is not a JSON object"
    assert message.stop_reason == "tool_use"  # as the wire said; no call of ours is open


def test_same_id_in_two_turns_is_no_repair() -> None:
    # The adapter sees one message at a time; reuse across turns is the runtime's.
    first = check_stream(run_events(tool_events()))
    second = check_stream(run_events(tool_events()))
    assert first.tool_uses[0].id == second.tool_uses[0].id == TOOL_ID
    assert first.repairs == second.repairs == ()


# --- malformed streams: errors ---------------------------------------------------------


def test_truncated_without_message_stop() -> None:
    events = tool_events()[:-1]
    with pytest.raises(StreamFormatError, match=r"anthropic stream truncated after 7 events"):
        run_events(events)


def test_truncated_mid_tool_use_names_the_open_block() -> None:
    raw = body(ANTHROPIC_TOOL)
    cut = raw[: raw.index("python3")]  # inside the tool's arguments
    normalizer = AnthropicNormalizer()
    from metis_runtime.providers import parse_sse

    seen = []
    with pytest.raises(StreamFormatError) as info:
        for sse in parse_sse(cut):
            seen.extend(normalizer.feed_sse(sse))
        normalizer.finish()
    assert "truncated" in str(info.value) and "still open: tool_use block 0" in str(info.value)
    assert seen == [BlockStarted(0, "tool_use", TOOL_ID, "bash")]  # streamed before the cut
    assert "\n" not in str(info.value)


@given(st.data())
def test_every_cut_before_message_stop_is_a_typed_truncation(data: st.DataObject) -> None:
    raw = body(ANTHROPIC_EDITOR)
    end = raw.index('data: {"type":"message_stop"') + len('data: {"type":"message_stop"}')
    cut = data.draw(st.integers(min_value=0, max_value=end))
    with pytest.raises(StreamFormatError, match="truncated"):
        normalize(AnthropicNormalizer(), raw[:cut])


def test_error_event_is_a_provider_error_naming_the_event() -> None:
    events = tool_events()
    events.insert(
        2, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    with pytest.raises(ProviderError) as info:
        run_events(events)
    assert not isinstance(info.value, StreamFormatError | ContextOverflowError)
    assert str(info.value) == (
        "anthropic stream event 2 (error): provider reported an error: overloaded_error: Overloaded"
    )


def test_error_event_about_prompt_length_is_context_overflow() -> None:
    events = tool_events()[:1]
    events.append(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 205351 tokens > 200000 maximum",
            },
        }
    )
    with pytest.raises(ContextOverflowError, match="prompt is too long"):
        run_events(events)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda ev: ev.pop(0), r"event 0 \(content_block_start\): content before message_start"),
        (
            lambda ev: ev[3].update(index=5),
            r"event 3 \(content_block_delta\): delta for block 5, which was never started",
        ),
        (
            lambda ev: ev[3].update(delta={"type": "text_delta", "text": "x"}),
            r"event 3 \(content_block_delta\): text_delta for block 0, which is a tool_use block",
        ),
        (
            lambda ev: ev.insert(5, {"type": "content_block_stop", "index": 0}),
            r"event 6 \(content_block_stop\): block 0 stopped twice",
        ),
        (
            lambda ev: ev.insert(1, copy.deepcopy(ev[0])),
            r"event 1 \(message_start\): second message_start",
        ),
        (
            lambda ev: ev[1]["content_block"].pop("name"),
            r"event 1 \(content_block_start\): tool_use block 0 has no name",
        ),
        (
            lambda ev: ev[1].update(index="0"),
            r"event 1 \(content_block_start\): field 'index' must be an integer",
        ),
    ],
)
def test_malformed_events_are_typed_errors(mutate: Any, message: str) -> None:
    events = tool_events()
    mutate(events)
    with pytest.raises(StreamFormatError, match=message):
        run_events(events)


def test_data_that_is_not_json_names_the_event() -> None:
    raw = body(ANTHROPIC_TOOL).replace('{"type":"content_block_stop","index":0}', "{oops")
    with pytest.raises(
        StreamFormatError, match=r"^anthropic stream event 5 \(content_block_stop\): "
    ):
        normalize(AnthropicNormalizer(), raw)


# --- malformed streams: normalized repairs ---------------------------------------------


def with_arguments(partial_json: str) -> list[dict[str, Any]]:
    events = tool_events()
    events[find(events, "content_block_delta") + 1]["delta"]["partial_json"] = partial_json
    return events


def test_invalid_json_arguments_become_empty_input_with_error() -> None:
    message = message_of(with_arguments('{"command": "ls" oops'))
    (call,) = message.tool_uses
    assert (call.id, call.name, call.input) == (TOOL_ID, "bash", {})
    assert call.input_error == "arguments are not valid JSON (Expecting ',' delimiter at column 18)"
    (note,) = message.repairs
    assert note.problem == (
        f"tool_use 'bash' (id '{TOOL_ID}', block 0): arguments are not valid JSON "
        "(Expecting ',' delimiter at column 18)"
    )
    assert note.repair == "input set to {}; the call gets an error result instead of running"
    assert message.stop_reason == "tool_use"  # the call keeps its place and must be closed


def test_arguments_that_are_not_an_object_are_repaired_too() -> None:
    (call,) = message_of(with_arguments("[1, 2]")).tool_uses
    assert call.input == {} and call.input_error == "arguments are JSON list, not an object"


def test_no_argument_deltas_means_the_start_input() -> None:
    events = [e for e in tool_events() if e["type"] != "content_block_delta"]
    events[1]["content_block"]["input"] = {"command": "pwd"}
    (call,) = message_of(events).tool_uses
    assert call.input == {"command": "pwd"} and call.input_error is None


def test_unknown_block_type_is_skipped_with_a_note() -> None:
    events = tool_events()
    alien = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "hologram"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta", "x": 1}},
        {"type": "content_block_stop", "index": 0},
    ]
    for event in events[1:-2]:
        if "index" in event:
            event["index"] = 1
    events[1:1] = alien
    message = message_of(events)
    assert message.blocks == (
        ToolUseBlock(TOOL_ID, "bash", {"command": 'python3 -c "print(2 + 2)"'}),
    )
    (note,) = message.repairs
    assert (note.problem, note.repair) == ("wire block 0 has unknown type 'hologram'", "skipped it")


def test_missing_tool_id_gets_a_deterministic_id() -> None:
    events = tool_events()
    del events[1]["content_block"]["id"]
    first = message_of(events)
    again = message_of(copy.deepcopy(events))
    (call,) = first.tool_uses
    assert call.id == f"missing-{MSG_ID}-0" == again.tool_uses[0].id
    (note,) = first.repairs
    assert note.problem == "tool_use 'bash' at block 0 has no id"


def test_duplicate_id_within_a_message_keeps_both_blocks() -> None:
    events = tool_events()
    start, stop = find(events, "content_block_start"), find(events, "content_block_stop")
    second = copy.deepcopy(events[start : stop + 1])
    for event in second:
        event["index"] = 1
    second[-2]["delta"]["partial_json"] = '{"command": "ls"}'
    events[stop + 1 : stop + 1] = second
    events_out = run_events(events)
    message = check_stream(events_out)
    assert [(c.id, c.input) for c in message.tool_uses] == [
        (TOOL_ID, {"command": 'python3 -c "print(2 + 2)"'}),
        (TOOL_ID, {"command": "ls"}),
    ]
    (note,) = message.repairs
    assert note.problem == f"tool_use id '{TOOL_ID}' repeated within message (blocks 0 and 1)"
    # The note is streamed when the repeat is seen, before the block starts.
    position = next(i for i, e in enumerate(events_out) if isinstance(e, StreamRepaired))
    assert events_out[position + 1] == BlockStarted(1, "tool_use", TOOL_ID, "bash")


def test_missing_stop_reason_is_inferred() -> None:
    events = tool_events()
    events[find(events, "message_delta")]["delta"]["stop_reason"] = None
    message = message_of(events)
    assert message.stop_reason == "tool_use"
    assert message.repairs[0].problem == "message ended without a stop_reason"


def test_block_never_stopped_is_closed_at_message_stop() -> None:
    events = [e for e in tool_events() if e["type"] != "content_block_stop"]
    message = message_of(events)
    assert message.tool_uses[0].input == {"command": 'python3 -c "print(2 + 2)"'}
    assert message.repairs[0].problem == (
        "block 0 (tool_use) had no content_block_stop before message_stop"
    )


def test_unknown_events_and_events_after_message_stop_change_nothing() -> None:
    events = tool_events()
    events.insert(3, {"type": "brand_new_event", "whatever": True})
    events.append({"type": "content_block_start", "index": 9, "content_block": {"type": "text"}})
    message = message_of(events)
    assert message.repairs == () and len(message.blocks) == 1


# --- request body ------------------------------------------------------------------------


def test_request_body_matches_the_recorded_second_request() -> None:
    recorded = cassette(ANTHROPIC_TOOL)["interactions"][1]["request"]["parsed_body"]
    prompt = recorded["messages"][0]["content"][0]["text"]
    request = ModelRequest(
        system=recorded["system"],
        messages=(
            Message.user(prompt),
            Message(
                "assistant",
                (ToolUseBlock(TOOL_ID, "bash", {"command": 'python3 -c "print(2 + 2)"'}),),
            ),
            Message("user", (ToolResultBlock(TOOL_ID, "4"),)),
        ),
    )
    ours = anthropic_request_body(request, recorded["model"])
    assert ours["messages"] == recorded["messages"]
    assert (ours["model"], ours["system"], ours["max_tokens"], ours["stream"]) == (
        recorded["model"],
        recorded["system"],
        recorded["max_tokens"],
        True,
    )
    assert "tools" not in ours  # no tools given, none sent


def test_request_body_translation_rules() -> None:
    request = ModelRequest(
        system="",
        messages=(
            Message.user("go"),
            Message(
                "assistant",
                (
                    ThinkingBlock("plan", "sig"),
                    ThinkingBlock("unsigned"),
                    TextBlock(""),
                    TextBlock("calling"),
                    ToolUseBlock("t1", "read", {"path": "a"}),
                ),
            ),
            Message("user", (TextBlock("and also"), ToolResultBlock("t1", "boom", is_error=True))),
        ),
        tools=(ToolSpec("read", "Read a file", {"type": "object"}),),
        max_tokens=100,
    )
    out = anthropic_request_body(request, "m", thinking_budget=2000)
    assert "system" not in out
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert out["tools"] == [
        {"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}
    ]
    assert out["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "plan", "signature": "sig"},
        {"type": "text", "text": "calling"},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
    ]
    # Results come first in the answering message, whatever order they were built in.
    assert out["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True},
        {"type": "text", "text": "and also"},
    ]
    json.dumps(out)  # plain JSON all the way down


# A compaction turn as the compaction guide documents it
# (https://platform.claude.com/docs/en/build-with-claude/compaction, "Streaming"
# and "Working with compaction blocks"): the block starts, one compaction_delta
# carries the whole summary, it stops; the text of the turn follows.
COMPACTION_SUMMARY = (
    "Summary of the conversation: The user requested help building a web scraper..."
)
COMPACTION_EVENTS: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"id": "msg_compacted", "type": "message",
     "role": "assistant", "content": [], "model": "claude-opus-4-6", "stop_reason": None,
     "usage": {"input_tokens": 45000, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "compaction",
     "content": None}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta",
     "content": COMPACTION_SUMMARY, "encrypted_content": "EqQBCkYIBxgC"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta",
     "text": "Based on our conversation so far..."}},
    {"type": "content_block_stop", "index": 1},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
     "usage": {"output_tokens": 1234}},
    {"type": "message_stop"},
]  # fmt: skip


def test_a_compaction_block_is_kept_and_goes_back_verbatim() -> None:
    posted: list[dict[str, Any]] = []
    answers = [to_sse(COMPACTION_EVENTS), body(ANTHROPIC_TOOL)]

    def serve(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        answer = answers[len(posted) - 1].encode("utf-8")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=answer)

    async def two_turns() -> list[Any]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(serve)) as http:
            provider = AnthropicProvider("claude-opus-4-6", api_key="k", http_client=http)
            first = ModelRequest("", (Message.user("Now add error handling"),))
            events = [e async for e in provider.stream(first)]
            message = check_stream(events)
            second = ModelRequest(
                "", (*first.messages, message.to_message(), Message.user("and tests"))
            )
            await complete(provider, second)
            return events

    message = check_stream(run(two_turns()))
    compaction = {"type": "compaction", "content": COMPACTION_SUMMARY,
                  "encrypted_content": "EqQBCkYIBxgC"}  # fmt: skip
    assert message.blocks == (
        ServerToolBlock(compaction),
        TextBlock("Based on our conversation so far..."),
    )
    assert message.repairs == () and message.tool_uses == ()
    assert posted[1]["messages"][1]["content"] == [
        compaction,
        {"type": "text", "text": "Based on our conversation so far..."},
    ]
