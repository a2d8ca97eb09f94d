"""Neutral types, the public surface, and the import boundary of the provider layer."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from pydantic import ValidationError

import metis_runtime.providers as providers
from metis_runtime.providers import AssistantMessage
from metis_runtime.providers import BlockFinished
from metis_runtime.providers import BlockStarted
from metis_runtime.providers import Message
from metis_runtime.providers import MessageComplete
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import RedactedThinkingBlock
from metis_runtime.providers import ServerToolBlock
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import StreamRepaired
from metis_runtime.providers import StreamRepairNote
from metis_runtime.providers import TextBlock
from metis_runtime.providers import TextDelta
from metis_runtime.providers import ThinkingBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolSpec
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import Usage
from tests.runtime.test_providers_support import web_search_blocks


def test_all_matches_the_public_names() -> None:
    public = {
        name
        for name in vars(providers)
        if not name.startswith("_") and name != "annotations"  # the __future__ import
    }
    assert set(providers.__all__) == public
    assert len(providers.__all__) == len(set(providers.__all__))
    for name in providers.__all__:
        assert getattr(providers, name) is not None


def test_runtime_providers_import_only_the_trace_of_the_model() -> None:
    root = Path(providers.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("metis_model"):
                    assert name.startswith("metis_trace"), f"{path.name} imports {name}"


def test_blocks_build_positionally_and_are_frozen() -> None:
    call = ToolUseBlock("t1", "read", {"path": "a"})
    assert (call.id, call.name, call.input, call.input_error, call.kind) == (
        "t1",
        "read",
        {"path": "a"},
        None,
        "tool_use",
    )
    assert ThinkingBlock("x").signature == ""
    assert ToolResultBlock("t1", "out").is_error is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "write"  # type: ignore[misc]


def test_blocks_validate_their_fields() -> None:
    with pytest.raises(ValidationError):
        TextBlock(3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ToolUseBlock("t1", "read", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Message("system", ())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("role", "block", "reason"),
    [
        ("user", ToolUseBlock("t", "read"), "a user message cannot hold a tool_use block"),
        ("user", ThinkingBlock("x"), "a user message cannot hold a thinking block"),
        (
            "user",
            RedactedThinkingBlock("x"),
            "a user message cannot hold a redacted_thinking block",
        ),
        (
            "user",
            ServerToolBlock({"type": "web_search_tool_result"}),
            "a user message cannot hold a server_tool block",
        ),
        ("assistant", ToolResultBlock("t", "x"), "an assistant message cannot hold a tool_result"),
    ],
)
def test_messages_refuse_blocks_of_the_other_role(role: str, block: object, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        Message(role, (block,))  # type: ignore[arg-type]


def test_assistant_message_helpers() -> None:
    message = AssistantMessage(
        "m1",
        (TextBlock("a"), ToolUseBlock("t1", "read", {"path": "x"}), TextBlock("b")),
        "tool_use",
    )
    assert message.text == "ab"
    assert message.tool_uses == (ToolUseBlock("t1", "read", {"path": "x"}),)
    assert message.to_message() == Message("assistant", message.blocks)
    assert Message.user("hi") == Message("user", (TextBlock("hi"),))


def test_messages_and_events_round_trip_through_json() -> None:
    message = AssistantMessage(
        "m1",
        (
            ThinkingBlock("hmm", "sig"),
            TextBlock("hi"),
            ToolUseBlock("t1", "bad", {}, "arguments are not valid JSON"),
        ),
        "tool_use",
        Usage(1, 2, 3, 4),
        (StreamRepairNote("problem", "repair"),),
    )
    events: list[StreamEvent] = [
        BlockStarted(0, "tool_use", "t1", "bad"),
        TextDelta(1, "hi"),
        BlockFinished(1, TextBlock("hi")),
        StreamRepaired(StreamRepairNote("p", "r")),
        MessageComplete(message),
    ]
    adapter = TypeAdapter(list[StreamEvent])
    assert adapter.validate_json(adapter.dump_json(events)) == events
    request = ModelRequest(
        "sys",
        (
            Message.user("q"),
            message.to_message(),
            Message("user", (ToolResultBlock("t1", "e", True),)),
        ),
        (ToolSpec("read", "Read", {"type": "object"}),),
    )
    request_adapter = TypeAdapter(ModelRequest)
    assert request_adapter.validate_json(request_adapter.dump_json(request)) == request


def test_opaque_blocks_round_trip_through_json() -> None:
    use, result = web_search_blocks("Eo8=")
    message = AssistantMessage(
        "m1",
        (
            ThinkingBlock("hmm", "sig"),
            RedactedThinkingBlock("EmwKAhgB=="),
            use,
            result,
            TextBlock("found"),
        ),
        "end_turn",
    )
    adapter = TypeAdapter(AssistantMessage)
    again = adapter.validate_json(adapter.dump_json(message))
    assert again == message
    assert again.blocks[3].raw == result.raw  # type: ignore[union-attr]
    assert [b.kind for b in again.blocks] == [
        "thinking",
        "redacted_thinking",
        "server_tool",
        "server_tool",
        "text",
    ]
    assert use.block_type == "server_tool_use"
    assert ServerToolBlock({}).block_type == ""
    assert message.tool_uses == ()  # the provider ran its tools: nothing for us to answer
    event = BlockStarted(1, "redacted_thinking")
    assert (
        TypeAdapter(StreamEvent).validate_json(TypeAdapter(StreamEvent).dump_json(event)) == event
    )
