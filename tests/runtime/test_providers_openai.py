"""OpenAI Chat Completions and Responses streams: recorded, mutated, request bodies."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from metis_runtime._errors import ProviderError
from metis_runtime._errors import StreamFormatError
from metis_runtime.providers import BlockStarted
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import OpenAIChatNormalizer
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ServerToolBlock
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolArgsDelta
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolSpec
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import Usage
from metis_runtime.providers import openai_chat_request_body
from metis_runtime.providers import openai_responses_request_body
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import RESPONSES_PHASE
from tests.runtime.test_providers_support import RESPONSES_USAGE
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import cassette
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import data_lines
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import to_sse

# --- Chat Completions ------------------------------------------------------------------

CHAT_TOOL = data_lines(body(CHAT))  # tool call chunks, finish chunk, usage chunk
CHAT_ID = "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl"
CALL_ID = "call_ZR5UUuTt3pf61kjwAJIYdVMj"


def chat(events: list[dict[str, Any]], *, done: bool = True) -> Any:
    return normalize(OpenAIChatNormalizer(), to_sse(events, named=False, done=done))


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": CHAT_ID,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def call_delta(index: int, arguments: str, **first: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if "id" in first:
        call["id"] = first["id"]
    if "name" in first:
        call["function"]["name"] = first["name"]
    return chunk({"tool_calls": [call]})


def test_chat_recorded_tool_call() -> None:
    events = normalize(OpenAIChatNormalizer(), body(CHAT))
    message = check_stream(events)
    assert message.message_id == CHAT_ID
    assert message.blocks == (ToolUseBlock(CALL_ID, "get_capital", {"country": "UK"}),)
    assert message.stop_reason == "tool_use"
    assert message.usage == Usage(input_tokens=53, output_tokens=15)
    assert events[0] == BlockStarted(0, "tool_use", CALL_ID, "get_capital")
    assert sum(isinstance(e, ToolArgsDelta) for e in events) == 5


def test_chat_recorded_text_answer() -> None:
    message = check_stream(normalize(OpenAIChatNormalizer(), body(CHAT, 1)))
    assert message.blocks == (TextBlock("The capital of the UK is London."),)
    assert message.stop_reason == "end_turn"
    assert message.usage == Usage(input_tokens=78, output_tokens=9)


def test_chat_parallel_calls_by_index_even_interleaved() -> None:
    events = [
        chunk({"role": "assistant", "content": "Checking both."}),
        call_delta(0, "", id="call_a", name="read"),
        call_delta(1, '{"path":', id="call_b", name="grep"),
        call_delta(0, '{"path": "a.txt"}'),
        call_delta(1, ' "src", "pattern": "x"}'),
        chunk({}, "tool_calls"),
    ]
    message = check_stream(chat(events))
    assert message.blocks == (
        TextBlock("Checking both."),
        ToolUseBlock("call_a", "read", {"path": "a.txt"}),
        ToolUseBlock("call_b", "grep", {"path": "src", "pattern": "x"}),
    )


def test_chat_without_done_marker_completes_on_finish_reason() -> None:
    # What the SDK path sees: the SDK swallows [DONE].
    message = check_stream(chat(CHAT_TOOL, done=False))
    assert message.tool_uses[0].input == {"country": "UK"}


def test_chat_truncated_before_finish_reason() -> None:
    with pytest.raises(StreamFormatError, match=r"^openai-chat stream truncated after 4 events"):
        chat(CHAT_TOOL[:4], done=False)


def test_chat_done_without_finish_reason_is_repaired() -> None:
    message = check_stream(chat(CHAT_TOOL[:6]))
    assert message.stop_reason == "tool_use"
    assert message.repairs[0].problem == "stream ended with [DONE] but no finish_reason"


def test_chat_invalid_arguments_are_repaired() -> None:
    events = copy.deepcopy(CHAT_TOOL)
    events[3]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = '"'  # no colon
    (call,) = check_stream(chat(events)).tool_uses
    assert call.input == {} and call.input_error is not None
    assert call.input_error.startswith("arguments are not valid JSON")


def test_chat_missing_id_and_duplicate_ids() -> None:
    events = [
        call_delta(0, "{}", name="read"),
        call_delta(1, "{}", id="dup", name="read"),
        call_delta(2, "{}", id="dup", name="read"),
        chunk({}, "tool_calls"),
    ]
    message = check_stream(chat(events))
    assert [c.id for c in message.tool_uses] == [f"missing-{CHAT_ID}-0", "dup", "dup"]
    assert [n.problem for n in message.repairs] == [
        "tool_use 'read' at block 0 has no id",
        "tool_use id 'dup' repeated within message (blocks 1 and 2)",
    ]


def test_chat_call_without_name_is_an_error() -> None:
    with pytest.raises(StreamFormatError, match=r"event 0 .*tool call 0 has no function name"):
        chat([call_delta(0, "{}", id="x"), chunk({}, "tool_calls")])


def test_chat_error_chunk_about_context_is_overflow() -> None:
    error = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    with pytest.raises(ContextOverflowError, match="maximum context length"):
        chat([chunk({"content": "x"}), error])


def test_chat_reasoning_of_compatible_servers_and_extra_choices() -> None:
    extra = chunk({"content": "ignored"})
    extra["choices"][0]["index"] = 1
    events = [
        chunk({"reasoning_content": "Think "}),
        chunk({"reasoning_content": "first."}),
        extra,
        chunk({"content": "Answer."}),
        chunk({}, "stop"),
    ]
    message = check_stream(chat(events))
    assert message.blocks == (ThinkingBlock("Think first."), TextBlock("Answer."))
    assert [n.problem for n in message.repairs] == ["stream has more than one choice"]


def get_capital_turn(prompt: str, call_id: str, country: str, capital: str) -> ModelRequest:
    """The recorded cassettes' second request: the prompt, the get_capital call, its answer."""
    return ModelRequest(
        system="",
        messages=(
            Message.user(prompt),
            Message("assistant", (ToolUseBlock(call_id, "get_capital", {"country": country}),)),
            Message("user", (ToolResultBlock(call_id, capital),)),
        ),
        tools=(ToolSpec("get_capital", "", {"type": "object"}),),
    )


def test_chat_request_body_matches_the_recorded_second_request() -> None:
    recorded = cassette(CHAT)["interactions"][1]["request"]["parsed_body"]
    request = get_capital_turn(recorded["messages"][0]["content"], CALL_ID, "UK", "London")
    ours = openai_chat_request_body(request, "gpt-4o-mini")
    assert ours["messages"] == recorded["messages"]
    assert ours["stream_options"] == recorded["stream_options"]
    assert ours["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_capital",
                "description": "",
                "parameters": {"type": "object"},
            },
        }
    ]


def test_chat_request_puts_tool_messages_before_user_text() -> None:
    request = ModelRequest(
        system="be brief",
        messages=(
            Message("user", (TextBlock("more"), ToolResultBlock("c1", "out", is_error=True))),
        ),
    )
    messages = openai_chat_request_body(request, "m")["messages"]
    assert messages == [
        {"role": "system", "content": "be brief"},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "user", "content": "more"},
    ]


# --- Responses -------------------------------------------------------------------------

RESP_TOOL = data_lines(body(RESPONSES))
RESP_ID = "resp_67e554a155508191900ee113293c4c830794405d35281ae2"
RESP_CALL = "call_kL0PCQV7M2WMoVX8V8OtYSAL"


def responses(events: list[dict[str, Any]]) -> Any:
    return normalize(OpenAIResponsesNormalizer(), to_sse(events))


def resp_events() -> list[dict[str, Any]]:
    return copy.deepcopy(RESP_TOOL)


def test_responses_recorded_function_call() -> None:
    message = check_stream(normalize(OpenAIResponsesNormalizer(), body(RESPONSES)))
    assert message.message_id == RESP_ID
    assert message.blocks == (ToolUseBlock(RESP_CALL, "get_capital", {"country": "France"}),)
    assert message.stop_reason == "tool_use"
    assert message.usage == Usage(input_tokens=255, output_tokens=16)
    assert message.repairs == ()


def test_responses_recorded_text() -> None:
    message = check_stream(normalize(OpenAIResponsesNormalizer(), body(RESPONSES, 1)))
    assert message.blocks == (TextBlock("The capital of France is Paris."),)
    assert message.stop_reason == "end_turn"


def test_responses_recorded_reasoning_text_and_call() -> None:
    message = check_stream(normalize(OpenAIResponsesNormalizer(), body(RESPONSES_PHASE)))
    # The reasoning item has no summary text: it leaves no block.
    assert message.blocks == (
        TextBlock("I’ll check the capital lookup tool for “PotatoLand.”"),
        ToolUseBlock("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", {"country": "PotatoLand"}),
    )
    usage = check_stream(normalize(OpenAIResponsesNormalizer(), body(RESPONSES_USAGE)))
    assert usage.tool_uses[0].input == {"result": 6666}


def test_responses_truncated_without_completed() -> None:
    with pytest.raises(StreamFormatError) as info:
        responses(resp_events()[:-2])
    assert str(info.value) == (
        "openai-responses stream truncated after 9 events: no response.completed; "
        "still open: tool_use block 0"
    )


def test_responses_invalid_arguments_are_repaired() -> None:
    events = resp_events()
    for event in events:
        if event["type"] == "response.function_call_arguments.delta":
            event["delta"] = "{"
        if event["type"] == "response.function_call_arguments.done":
            event["arguments"] = "{{{{{"
        if event["type"] == "response.output_item.done":
            event["item"]["arguments"] = "{{{{{"
    message = check_stream(responses(events))
    (call,) = message.tool_uses
    assert call.input == {} and call.input_error is not None
    (note,) = message.repairs
    assert "arguments are not valid JSON" in note.problem


def test_responses_final_arguments_win_over_deltas() -> None:
    events = resp_events()
    events[3]["delta"] = '{"country":"Spain"}'  # the first delta; the rest still follow
    message = check_stream(responses(events))
    assert message.tool_uses[0].input == {"country": "France"}
    assert message.repairs[0].repair == "used the final arguments"


def test_responses_missing_call_id_is_synthesized() -> None:
    events = resp_events()
    del events[2]["item"]["call_id"]
    message = check_stream(responses(events))
    assert message.tool_uses[0].id == f"missing-{RESP_ID}-0"


def test_responses_hosted_and_unknown_items_are_skipped() -> None:
    events = resp_events()
    hosted = [
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"},
        },
        {"type": "response.web_search_call.completed", "output_index": 1, "item_id": "ws_1"},
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "web_search_call"},
        },
        {"type": "response.output_item.added", "output_index": 2, "item": {"type": "teleport"}},
        {"type": "response.output_item.done", "output_index": 2, "item": {"type": "teleport"}},
    ]
    events[-1:-1] = hosted
    message = check_stream(responses(events))
    assert len(message.blocks) == 1
    assert [n.problem for n in message.repairs] == [
        "output item 1 is web_search_call, run by the provider itself",
        "output item 2 has unknown type 'teleport'",
    ]


def test_responses_reasoning_summary_becomes_thinking() -> None:
    events = resp_events()
    reasoning = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning"}},
        *(
            {
                "type": "response.reasoning_summary_text.delta",
                "output_index": 0,
                "summary_index": part,
                "delta": text,
            }
            for part, text in ((0, "Look it "), (0, "up."), (1, "Then answer."))
        ),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"type": "reasoning", "encrypted_content": "enc"},
        },
    ]
    for event in events:
        if "output_index" in event:
            event["output_index"] = 1
    events[2:2] = reasoning
    message = check_stream(responses(events))
    assert message.blocks[0] == ThinkingBlock("Look it up.\n\nThen answer.", "enc")
    assert message.blocks[1].kind == "tool_use"


def test_responses_incomplete_maps_the_reason() -> None:
    events = resp_events()
    events[-1]["type"] = "response.incomplete"
    events[-1]["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    assert check_stream(responses(events)).stop_reason == "max_tokens"


def test_responses_failed_and_error_events() -> None:
    failed = [
        *resp_events()[:2],
        {
            "type": "response.failed",
            "response": {
                "id": RESP_ID,
                "error": {"code": "context_length_exceeded", "message": "Input is too long."},
            },
        },
    ]
    with pytest.raises(ContextOverflowError, match=r"event 2 \(response.failed\)"):
        responses(failed)
    error = [*resp_events()[:2], {"type": "error", "code": "server_error", "message": "boom"}]
    with pytest.raises(ProviderError, match="server_error: boom") as info:
        responses(error)
    assert not isinstance(info.value, StreamFormatError)


def test_responses_event_for_unknown_item_is_an_error() -> None:
    events = resp_events()
    events[3]["output_index"] = 7
    events[3]["item_id"] = "nope"
    with pytest.raises(StreamFormatError, match=r"event 3 .*output item 7, which was never added"):
        responses(events)


def test_responses_request_body_matches_the_recorded_second_request() -> None:
    recorded = cassette(RESPONSES)["interactions"][1]["request"]["parsed_body"]
    call_id = recorded["input"][1]["call_id"]
    request = get_capital_turn(recorded["input"][0]["content"], call_id, "France", "Paris")
    ours = openai_responses_request_body(request, "gpt-4o")
    assert ours["input"] == recorded["input"]
    assert "instructions" not in ours
    assert ours["tools"] == [
        {
            "type": "function",
            "name": "get_capital",
            "description": "",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]


def _turn_with_anthropic_only_blocks() -> ModelRequest:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
           "input": {"query": "q"}}  # fmt: skip
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    return ModelRequest(
        system="",
        messages=(
            Message.user("go"),
            Message(
                "assistant",
                (
                    ThinkingBlock("plan", "THINKING-SIG"),
                    RedactedThinkingBlock("REDACTED-DATA"),
                    ServerToolBlock(use),
                    ServerToolBlock(result),
                    TextBlock("calling"),
                    ToolUseBlock("c1", "ls", {}),
                ),
            ),
            Message("user", (ToolResultBlock("c1", "a.txt"),)),
        ),
    )


def test_openai_requests_leave_out_thinking_redacted_and_server_tool_blocks() -> None:
    # Neither API has an input for Anthropic's redacted_thinking or server tool
    # blocks; reasoning is not sent back either, as the Responses adapter never
    # asks for encrypted reasoning (no `include`, default `store`).
    request = _turn_with_anthropic_only_blocks()
    chat = openai_chat_request_body(request, "m")
    assert chat["messages"][1] == {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    }
    responses_body = openai_responses_request_body(request, "m")
    assert responses_body["input"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
    ]
    assert "include" not in responses_body and "store" not in responses_body
    for out in (chat, responses_body):
        text = json.dumps(out)
        assert "REDACTED-DATA" not in text and "srvtoolu_1" not in text
        assert "THINKING-SIG" not in text and "plan" not in text
