"""The requests as posted (`_wire.py`): what the Messages API reads in them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.providers import Cassette
from metis_runtime.providers import Interaction
from metis_runtime.providers import MessageComplete
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers._types import Message
from metis_runtime.providers._types import TextBlock
from metis_runtime.providers._types import ToolUseBlock
from metis_studies.explore._responses import RESPONSES_BASE_URL
from metis_studies.explore._responses import RESPONSES_URI
from metis_studies.explore._responses import responses_body
from metis_studies.explore._wire import sent_problems
from metis_studies.explore._wire import write_sent
from metis_studies.explore._workload import Call
from metis_studies.explore._workload import Turn


def _use(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": i, "name": "read", "input": {}} for i in ids],
    }


def _results(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _r(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


NOTE = {"type": "text", "text": "[background job j1 ended: ok]"}
PROMPT = {"role": "user", "content": "go"}


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([PROMPT, _use("a", "b"), _results(_r("a"), _r("b"), NOTE)], None),
        ([PROMPT, _use("a"), _results(NOTE, _r("a"))], "CLOSE-2"),  # text first: ANT-2
        ([PROMPT, _use("a", "b"), _results(_r("b"), _r("a"))], "CLOSE-3"),  # call order
        ([PROMPT, _use("a"), _results(_r("a"), _r("z"))], "CLOSE-4"),
        ([PROMPT, _use("a", "b"), _results(_r("a"))], "CLOSE-2"),  # one unanswered
        ([PROMPT, _use("a", "a"), _results(_r("a"), _r("a"))], "CLOSE-1"),  # ANT-4, ANT-5
        ([PROMPT, _use("a"), _use("b"), _results(_r("b"))], "CLOSE-2"),
    ],
)
def test_a_request_body_is_read_as_the_provider_reads_it(
    tmp_path: Path, messages: list[dict[str, Any]], problem: str | None
) -> None:
    write_sent(tmp_path, [{"model": "m", "messages": messages[:1]}, {"messages": messages}])
    found = sent_problems(tmp_path)
    assert [i for i, _ in found] == ([problem] if problem else [])


def test_no_file_says_nothing_and_a_bad_line_is_format(tmp_path: Path) -> None:
    assert sent_problems(tmp_path) == []
    (tmp_path / "sent.jsonl").write_text("{not json\n")
    assert [i for i, _ in sent_problems(tmp_path)] == ["FORMAT"]


def test_an_id_the_script_itself_repeats_is_echoed_not_held_against_it(tmp_path: Path) -> None:
    body = {"messages": [PROMPT, _use("d", "d"), _results(_r("d"), _r("d"))]}
    write_sent(tmp_path, [body])
    assert sent_problems(tmp_path, {"d"}) == []
    assert [i for i, _ in sent_problems(tmp_path)] == ["CLOSE-1"]


def _responses_body(note_first: bool) -> dict[str, Any]:
    calls = [
        {"type": "function_call", "call_id": c, "name": "read", "arguments": "{}"} for c in "ab"
    ]
    outputs = [{"type": "function_call_output", "call_id": c, "output": "x"} for c in "ab"]
    note = [{"role": "user", "content": "[background job job-1 of call 1.0 ended: ok]"}]
    rest = [*note, *outputs] if note_first else [*outputs, *note]
    return {"model": "m", "input": [{"role": "user", "content": "go"}, *calls, *rest]}


def test_a_responses_body_is_read_as_a_responses_request(tmp_path: Path) -> None:
    write_sent(tmp_path, [_responses_body(note_first=False)])
    assert sent_problems(tmp_path) == []
    write_sent(tmp_path, [_responses_body(note_first=True)])
    ((invariant, message),) = sent_problems(tmp_path)
    assert invariant == "CLOSE-2" and "OAR-6" in message and "'a'" in message


def test_a_turn_on_the_responses_wire_is_read_back_by_the_runtimes_adapter() -> None:
    turn = Turn(text="Reading.", calls=(Call(id="c1", tool="read", input={"path": "a.txt"}),))
    body = responses_body(turn, "resp_1")
    item = Interaction(RESPONSES_URI, "openai-responses", RESPONSES_BASE_URL, 200, body)
    replay = ReplayProvider(Cassette(Path("c"), (item,)))
    request = ModelRequest(system="", messages=(Message("user", (TextBlock("go"),)),), tools=())

    async def blocks() -> list[Any]:
        async for event in replay.stream(request):
            if isinstance(event, MessageComplete):
                return list(event.message.blocks)
        return []

    got = asyncio.run(blocks())
    assert got[0] == TextBlock("Reading.")
    assert isinstance(got[1], ToolUseBlock) and (got[1].id, got[1].input) == (
        "c1",
        {"path": "a.txt"},
    )


@pytest.mark.parametrize(
    "turn",
    [
        Turn(text="Reading.", calls=(Call(id="c1", tool="read", input={"path": "a.txt"}),)),
        Turn(calls=(Call(id="a", tool="read", input={}), Call(id="b", tool="ls", input={}))),
        Turn(text="Done."),
    ],
)
def test_a_responses_turn_is_what_the_official_sdk_reads(turn: Turn) -> None:
    """The consumer's types (`openai.types.responses`), not only our adapter:
    each event validates as the event its `type` names."""
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    events = TypeAdapter(ResponseStreamEvent)
    for split in (lambda t: [t], lambda t: [t[:3], t[3:]]):
        for block in responses_body(turn, "resp_1", split).strip().split("\n\n"):
            data = json.loads(block.split("data: ", 1)[1])
            assert events.validate_python(data).type == data["type"]
