"""ScriptedProvider (the function-driven test double) and `complete`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from metis_runtime._errors import ProviderError
from metis_runtime._errors import StreamFormatError
from metis_runtime.providers import AssistantMessage
from metis_runtime.providers import BlockFinished
from metis_runtime.providers import BlockStarted
from metis_runtime.providers import Message
from metis_runtime.providers import MessageComplete
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import Provider
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import StreamRepaired
from metis_runtime.providers import StreamRepairNote
from metis_runtime.providers import TextBlock
from metis_runtime.providers import TextDelta
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ThinkingDelta
from metis_runtime.providers import ToolArgsDelta
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import complete
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import drain
from tests.runtime.test_providers_support import run

REQUEST = ModelRequest("sys", (Message.user("hi"),))


def test_list_script_streams_each_turn() -> None:
    provider = ScriptedProvider(
        [
            [
                ThinkingBlock("plan"),
                TextBlock("Reading."),
                ToolUseBlock("t1", "read", {"path": "a"}),
            ],
            [TextBlock("Done.")],
        ]
    )
    assert isinstance(provider, Provider)
    events = run(drain(provider.stream(REQUEST)))
    first = check_stream(events)
    assert events == [
        BlockStarted(0, "thinking"),
        ThinkingDelta(0, "plan"),
        BlockFinished(0, ThinkingBlock("plan")),
        BlockStarted(1, "text"),
        TextDelta(1, "Reading."),
        BlockFinished(1, TextBlock("Reading.")),
        BlockStarted(2, "tool_use", "t1", "read"),
        ToolArgsDelta(2, '{"path": "a"}'),
        BlockFinished(2, ToolUseBlock("t1", "read", {"path": "a"})),
        MessageComplete(first),
    ]
    assert (first.message_id, first.stop_reason) == ("scripted-0", "tool_use")
    second = run(complete(provider, REQUEST))
    assert (second.message_id, second.stop_reason, second.text) == (
        "scripted-1",
        "end_turn",
        "Done.",
    )
    assert provider.requests == [REQUEST, REQUEST]
    with pytest.raises(ProviderError, match="scripted: no scripted answer for turn 2"):
        run(complete(provider, REQUEST))


def test_function_script_sees_request_and_turn() -> None:
    def script(request: ModelRequest, turn: int) -> list[TextBlock | ToolUseBlock]:
        last = request.messages[-1].content[-1]
        if isinstance(last, ToolResultBlock):
            return [TextBlock(f"turn {turn}: got {last.content}")]
        return [ToolUseBlock(f"c{turn}", "ls", {})]

    provider = ScriptedProvider(script)
    call = run(complete(provider, REQUEST)).tool_uses[0]
    follow = ModelRequest(
        "sys",
        (*REQUEST.messages, Message("assistant", (call,)), Message("user", (ToolResultBlock(call.id, "a.txt"),))),
    )  # fmt: skip
    assert run(complete(provider, follow)).text == "turn 1: got a.txt"


def test_async_function_and_full_messages_with_repairs() -> None:
    note = StreamRepairNote("tool_use 'x' has no id", "synthesized one")

    async def script(request: ModelRequest, turn: int) -> AssistantMessage:
        return AssistantMessage(
            "m-7", (ToolUseBlock("missing-m-7-0", "x"),), "tool_use", None, (note,)
        )

    events = run(drain(ScriptedProvider(script).stream(REQUEST)))
    assert events[0] == StreamRepaired(note)
    assert check_stream(events).repairs == (note,)


def test_chunk_size_splits_deltas() -> None:
    provider = ScriptedProvider([[TextBlock("abcdefg")]], chunk_size=3)
    events = run(drain(provider.stream(REQUEST)))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["abc", "def", "g"]
    check_stream(events)


def test_bad_answers_are_type_errors_naming_the_turn() -> None:
    with pytest.raises(TypeError, match="turn 0 holds a ToolResultBlock"):
        run(complete(ScriptedProvider([[ToolResultBlock("t", "x")]]), REQUEST))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="turn 0 answered str"):
        run(complete(ScriptedProvider(lambda r, n: "text"), REQUEST))  # type: ignore[arg-type,return-value]


class _Raw:
    """A provider that yields exactly the events it is given."""

    name = "raw"

    def __init__(self, events: list[StreamEvent]) -> None:
        self.events = events

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for event in self.events:
            yield event


def test_complete_insists_on_exactly_one_final_message() -> None:
    done = MessageComplete(AssistantMessage("m", (), "end_turn"))
    assert run(complete(_Raw([done]), REQUEST)) == done.message
    with pytest.raises(StreamFormatError, match="raw: stream ended without MessageComplete"):
        run(complete(_Raw([BlockStarted(0, "text")]), REQUEST))
    with pytest.raises(StreamFormatError, match="raw: stream went on after MessageComplete"):
        run(complete(_Raw([done, done]), REQUEST))
