"""Client-executed Responses items (issue 24): `local_shell_call`, `shell_call`,
`apply_patch_call`, `custom_tool_call` and `tool_search_call` become the
runtime's tool calls, go back verbatim on the next request, and their results
as the items' `*_output`; the transcript checker reads that request as closed.

The items are OpenAI's documented wire shapes (openai-python
`src/openai/types/responses/response_output_item.py`: `LocalShellCall`,
`ResponseFunctionShellToolCall`, `ResponseApplyPatchToolCall`,
`ResponseCustomToolCall`, `ResponseToolSearchCall`; the stream events
`response.output_item.added`/`.done` and `response.custom_tool_call_input.delta`
from `response_stream_event.py`), with ids of the forms the API gives.
"""

from __future__ import annotations

import json
from typing import Any

from metis_check.transcripts import check_transcript
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import openai_responses_request_body
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import to_sse

LOCAL_SHELL = {
    "type": "local_shell_call",
    "id": "lsh_68a1c3f0e1d8819c9b2b0a7e1f3d4c5b",
    "call_id": "call_q8Zk2JtR4mVn6Lw0Xa1Yb3Cd",
    "status": "completed",
    "action": {
        "type": "exec",
        "command": ["ls", "-la", "my dir"],
        "env": {"LANG": "C"},
        "timeout_ms": 5000,
        "user": None,
        "working_directory": "/tmp",
    },
}
SHELL = {
    "type": "shell_call",
    "id": "sh_68a1c3f0e1d8819c9b2b0a7e1f3d4c5c",
    "call_id": "call_Hn4Pq7Rs2Tu5Vw8Xy1Za3Bc",
    "status": "completed",
    "action": {
        "commands": ["pwd", "git status --short"],
        "timeout_ms": 10000,
        "max_output_length": 4096,
    },
}
APPLY_PATCH = {
    "type": "apply_patch_call",
    "id": "apc_68a1c3f0e1d8819c9b2b0a7e1f3d4c5d",
    "call_id": "call_Jk5Lm8Np1Qr4St7Uv0Wx3Yz",
    "status": "completed",
    "operation": {"type": "update_file", "path": "src/app.py", "diff": "@@\n-a\n+b\n"},
}
CUSTOM = {
    "type": "custom_tool_call",
    "id": "ctc_68a1c3f0e1d8819c9b2b0a7e1f3d4c5e",
    "call_id": "call_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op",
    "name": "grep",
    "input": "",
}
TOOL_SEARCH = {
    "type": "tool_search_call",
    "id": "ts_68a1c3f0e1d8819c9b2b0a7e1f3d4c5f",
    "call_id": "call_Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk",
    "execution": "client",
    "arguments": {"query": "calendar"},
    "status": "completed",
}
RESPONSE_ID = "resp_68a1c3ef7c84819c8c1c6d1e2f3a4b5c"


def _stream(*items: dict[str, Any], custom_deltas: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": RESPONSE_ID, "status": "in_progress"}}
    ]
    for index, item in enumerate(items):
        added = dict(item, status="in_progress")
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        if item["type"] == "custom_tool_call":
            for delta in custom_deltas:
                events.append(
                    {
                        "type": "response.custom_tool_call_input.delta",
                        "output_index": index,
                        "item_id": item["id"],
                        "delta": delta,
                    }
                )
            done_input = "".join(custom_deltas)
            events.append(
                {
                    "type": "response.custom_tool_call_input.done",
                    "output_index": index,
                    "item_id": item["id"],
                    "input": done_input,
                }
            )
            item = dict(item, input=done_input)
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    usage = {"input_tokens": 12, "output_tokens": 7}
    events.append(
        {
            "type": "response.completed",
            "response": {"id": RESPONSE_ID, "status": "completed", "usage": usage},
        }
    )
    return events


def test_client_items_become_the_runtimes_tool_calls() -> None:
    deltas = ('{"pattern": "TO', 'DO", "path": "src"}')
    events = normalize(
        OpenAIResponsesNormalizer(),
        to_sse(_stream(LOCAL_SHELL, SHELL, APPLY_PATCH, CUSTOM, TOOL_SEARCH, custom_deltas=deltas)),
    )
    message = check_stream(events)
    calls = [b for b in message.blocks if isinstance(b, ToolUseBlock)]
    assert [(c.id, c.name) for c in calls] == [
        (LOCAL_SHELL["call_id"], "bash"),
        (SHELL["call_id"], "bash"),
        (APPLY_PATCH["call_id"], "apply_patch"),
        (CUSTOM["call_id"], "grep"),
        (TOOL_SEARCH["call_id"], "tool_search"),
    ]
    assert calls[0].input == {"command": "cd /tmp && env LANG=C ls -la 'my dir'", "timeout": 5.0}
    assert calls[1].input == {"command": "pwd\ngit status --short", "timeout": 10.0}
    assert calls[2].input == APPLY_PATCH["operation"]
    assert calls[3].input == {"pattern": "TODO", "path": "src"}  # the streamed raw input
    assert calls[4].input == {"query": "calendar"}
    assert message.stop_reason == "tool_use"
    assert all(c.wire is not None and c.wire["type"] for c in calls)


def test_a_custom_input_that_is_not_json_is_passed_as_text() -> None:
    events = normalize(
        OpenAIResponsesNormalizer(), to_sse(_stream(CUSTOM, custom_deltas=("*** Begin Patch",)))
    )
    (call,) = [b for b in check_stream(events).blocks if isinstance(b, ToolUseBlock)]
    assert call.input == {"input": "*** Begin Patch"}


def test_server_run_items_stay_the_providers() -> None:
    server_search = dict(TOOL_SEARCH, execution="server")
    container = dict(SHELL, environment={"type": "container_auto"})
    message = check_stream(
        normalize(OpenAIResponsesNormalizer(), to_sse(_stream(server_search, container)))
    )
    assert not [b for b in message.blocks if isinstance(b, ToolUseBlock)]
    assert [r.problem for r in message.repairs] == [
        "output item 0 is tool_search_call, run by the provider itself",
        "output item 1 is shell_call, run by the provider itself",
    ]


def test_the_next_request_sends_the_items_back_and_their_outputs() -> None:
    events = normalize(
        OpenAIResponsesNormalizer(),
        to_sse(
            _stream(
                LOCAL_SHELL,
                SHELL,
                APPLY_PATCH,
                CUSTOM,
                TOOL_SEARCH,
                custom_deltas=('{"pattern": "x"}',),
            )
        ),
    )
    message = check_stream(events)
    calls = [b for b in message.blocks if isinstance(b, ToolUseBlock)]
    results = tuple(
        ToolResultBlock(c.id, f"out {c.name}", is_error=c.name == "apply_patch") for c in calls
    )
    request = ModelRequest(
        system="",
        messages=(
            Message.user("look around"),
            Message("assistant", message.blocks),
            Message("user", results),
        ),
    )
    items = openai_responses_request_body(request, "gpt-5")["input"]
    sent = [i for i in items if i.get("type")]
    assert [i["type"] for i in sent] == [
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "custom_tool_call",
        "tool_search_call",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "custom_tool_call_output",
        "tool_search_output",
    ]
    assert sent[0] == LOCAL_SHELL  # verbatim
    assert sent[5] == {
        "type": "local_shell_call_output",
        "call_id": LOCAL_SHELL["call_id"],
        "output": "out bash",
    }
    assert sent[6]["output"][0]["outcome"] == {"type": "exit", "exit_code": 0}
    assert sent[7]["status"] == "failed"
    assert sent[9]["execution"] == "client" and sent[9]["tools"] == []
    # The transcript checker reads the same item types: every call answered.
    report = check_transcript(json.dumps({"model": "gpt-5", "input": items}), "openai-responses")
    assert report.ok and not report.violations and not report.undecided, report
