"""Reading transcripts whole: every block and item type, several documents, partial files.

Issue 14's findings, each pinned: client-executed Responses calls that were
dropped, Anthropic blocks that were skipped, bodies cut after the first
response, a rollout that "conformed" under the wrong format, slices and live
sessions read as broken, and a line holding two records.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from metis_check.transcripts import TranscriptFormatError
from metis_check.transcripts import check_transcript

from .test_provider_rules import COMPACTION
from .test_provider_rules import SERVER
from .test_provider_rules import SERVER_RESULT
from .test_provider_rules import assistant
from .test_provider_rules import body
from .test_provider_rules import cc_assistant
from .test_provider_rules import cc_user
from .test_provider_rules import fc
from .test_provider_rules import fco
from .test_provider_rules import inputs
from .test_provider_rules import session
from .test_provider_rules import text
from .test_provider_rules import tool_result
from .test_provider_rules import tool_use
from .test_provider_rules import user


def pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=1).splitlines()


def cited(report: Any) -> set[tuple[str, str]]:
    return {(v.invariant, v.rule) for v in report.violations}


# -- OpenAI Responses: every client-executed call is kept ---------------------------

CLIENT_CALLS = {
    "function_call": ({"name": "f", "arguments": "{}"}, "function_call_output"),
    "custom_tool_call": ({"name": "f", "input": "x"}, "custom_tool_call_output"),
    "local_shell_call": (
        {"status": "completed", "action": {"type": "exec", "command": ["ls"], "env": {}}},
        "local_shell_call_output",
    ),
    "shell_call": ({"action": {"commands": ["ls"]}}, "shell_call_output"),
    "apply_patch_call": (
        {"operation": {"type": "delete_file", "path": "a"}, "status": "completed"},
        "apply_patch_call_output",
    ),
    "computer_call": (
        {"action": {"type": "click"}, "pending_safety_checks": []},
        "computer_call_output",
    ),
    "tool_search_call": ({"arguments": {}, "execution": "client"}, "tool_search_output"),
}


@pytest.mark.parametrize("kind", sorted(CLIENT_CALLS))
def test_every_client_executed_responses_call_needs_its_output(kind: str) -> None:
    fields, output = CLIENT_CALLS[kind]
    call = {"type": kind, "call_id": "c1", **fields}
    answer = {"type": output, "call_id": "c1", "output": "ok"}
    if kind == "tool_search_call":
        answer = {"type": output, "call_id": "c1", "execution": "client", "tools": []}
    assert check_transcript(pretty(inputs(call, answer)), "openai-responses").ok
    missing = check_transcript(pretty(inputs(call)), "openai-responses")
    assert cited(missing) == {("CLOSE-2", "OAR-1")}, kind
    assert missing.transitions[kind] == 1


def test_server_side_variants_need_no_client_output() -> None:
    server_search = {
        "type": "tool_search_call",
        "call_id": "s1",
        "arguments": {},
        "execution": "server",
    }
    container = {
        "type": "shell_call",
        "call_id": "s2",
        "action": {"commands": ["ls"]},
        "environment": {"type": "container_reference", "container_id": "cntr_1"},
    }
    hosted = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}}
    report = check_transcript(pretty(inputs(server_search, container, hosted)), "openai-responses")
    assert report.ok and report.events == 4


def test_a_local_shell_output_without_call_id_answers_nothing() -> None:
    call = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "c1",
        "status": "completed",
        "action": {},
    }
    by_id = {"type": "local_shell_call_output", "id": "c1", "output": "{}"}
    report = check_transcript(pretty(inputs(call, by_id)), "openai-responses")
    assert cited(report) == {("CLOSE-4", "OAR-2"), ("CLOSE-2", "OAR-1")}


def test_mcp_approval_responses_pair_with_their_requests() -> None:
    request = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "s",
        "name": "t",
        "arguments": "{}",
    }
    response = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
    assert check_transcript(pretty(inputs(request, response)), "openai-responses").ok
    stray = {"type": "mcp_approval_response", "approval_request_id": "mcpr_9", "approve": True}
    report = check_transcript(pretty(inputs(request, stray)), "openai-responses")
    assert [v.invariant for v in report.violations] == ["CLOSE-4"]


def test_an_item_reference_may_stand_for_the_call_an_output_answers() -> None:
    reference = {"type": "item_reference", "id": "fc_stored"}
    assert check_transcript(pretty(inputs(reference, fco("stored"))), "openai-responses").ok


def test_an_unknown_item_type_is_a_warning_not_a_silent_skip() -> None:
    report = check_transcript(
        pretty(inputs(fc("a"), fco("a"), {"type": "hologram"})), "openai-responses"
    )
    assert report.ok
    assert [n.message for n in report.notes] == [
        "item type 'hologram' is not a Responses item type"
    ]


# -- Anthropic: every block type is kept ---------------------------------------------


def test_server_tool_results_pair_with_their_server_call_across_a_pause() -> None:
    # pause_turn: the next response starts with the server tool's result.
    paused = body(user(text()), assistant(SERVER), assistant(SERVER_RESULT, text()))
    assert check_transcript(pretty(paused), "anthropic").ok
    twice = body(user(text()), assistant(SERVER, SERVER_RESULT, SERVER_RESULT))
    assert cited(check_transcript(pretty(twice), "anthropic")) == {("CLOSE-1", "ANT-7")}


def test_mcp_tool_use_and_its_result_are_read() -> None:
    mcp = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "t", "server_name": "s", "input": {}}
    result = {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_1",
        "content": [],
        "is_error": False,
    }
    report = check_transcript(pretty(body(user(text()), assistant(mcp, result))), "anthropic")
    assert report.ok and report.transitions["block:mcp_tool_result"] == 1


def test_a_compaction_block_drops_the_open_call_before_it() -> None:
    lines = pretty(body(user(text()), assistant(tool_use("a"), COMPACTION), user(tool_result("a"))))
    report = check_transcript(lines, "anthropic")
    assert cited(report) == {("CLOSE-6", "ANT-8")}
    # The call's block and the result's block, each at the line of its opening brace.
    blocks = {i for i, line in enumerate(lines) if '"type": "tool_' in line}
    assert {v.line for v in report.violations} == blocks


def test_a_failed_compaction_block_is_a_no_op() -> None:
    failed = {"type": "compaction", "content": None}
    good = body(user(text()), assistant(tool_use("a"), failed), user(tool_result("a")))
    assert check_transcript(pretty(good), "anthropic").ok


def test_an_unknown_block_type_is_a_warning() -> None:
    report = check_transcript(pretty(body(user(text(), {"type": "hologram"}))), "anthropic")
    assert report.ok and [n.message for n in report.notes] == [
        "content block type 'hologram' is not an Anthropic type"
    ]


# -- several documents in one file ---------------------------------------------------


def test_several_request_bodies_are_each_checked() -> None:
    first = body(user(text()), assistant(tool_use("a")), user(tool_result("a")))
    second = body(user(text()), assistant(tool_use("a")), user(text("lost")))  # a is open here
    lines = [json.dumps(first), json.dumps(second)]
    report = check_transcript(lines, "anthropic")
    assert [(v.invariant, v.line) for v in report.violations] == [("CLOSE-2", 2)]
    assert report.events == 6  # every message of both bodies, and no CLOSE-9 across them


def test_concatenated_responses_after_a_body_are_all_read() -> None:
    request = body(user(text()))
    first = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [tool_use("a")],
        "stop_reason": "tool_use",
    }
    answer = user(tool_result("a"))
    second = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "content": [tool_use("b")],
        "stop_reason": "tool_use",
    }
    lines = [json.dumps(d) for d in (request, first, answer, second)]
    report = check_transcript(lines, "anthropic")
    assert report.events == 4 and not report.violations
    # The last reply's call was never sent back: undecided, not broken.
    assert [(u.status, u.line) for u in report.undecided] == [("open-at-end", 4)]


def test_chat_choices_of_one_reply_are_alternatives() -> None:
    from .test_provider_rules import chat
    from .test_provider_rules import chat_call
    from .test_provider_rules import tool_msg

    request = chat()
    call = chat_call("a")
    reply = {
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": call},
            {"index": 1, "message": {"role": "assistant", "content": "no tools"}},
        ],
    }
    report = check_transcript([json.dumps(request), json.dumps(reply)], "openai-chat")
    assert [u.status for u in report.undecided] == ["open-at-end"]
    answered = chat(call, tool_msg("a"))
    assert check_transcript(pretty(answered), "openai-chat").ok


def test_responses_response_objects_are_read_as_output() -> None:
    reply = {"id": "resp_1", "object": "response", "output": [fc("a", "fc_1")]}
    report = check_transcript([json.dumps(inputs()), json.dumps(reply)], "openai-responses")
    assert [u.status for u in report.undecided] == ["open-at-end"] and report.events == 2


def test_two_records_on_one_line_are_split_with_a_warning() -> None:
    line = json.dumps(user(text())) + json.dumps(assistant(text()))
    report = check_transcript([line], "anthropic")
    assert report.ok and report.events == 2
    assert [n.line for n in report.notes] == [1]


# -- Claude Code: reused ids, slices, live sessions, split lines, wrong format --------


def test_claude_code_reused_tool_use_id_across_messages_is_close_9() -> None:
    lines = session(
        cc_user(),
        cc_assistant("m1", tool_use("toolu_a")),
        cc_user(tool_result("toolu_a")),
        cc_assistant("m2", tool_use("toolu_a")),
        cc_user(tool_result("toolu_a")),
    )
    report = check_transcript(lines, "claude-code")
    assert [(v.invariant, v.rule, v.line) for v in report.violations] == [("CLOSE-9", "ANT-5", 4)]


def test_claude_code_reuse_on_an_abandoned_branch_is_not_in_the_request() -> None:
    lines = session(cc_user(), cc_assistant("m1", tool_use("toolu_a")))
    rewind = json.loads(lines[1])  # the user re-sent the prompt: a sibling branch
    rewind.update(uuid="r1", parentUuid="u0")
    rewind["message"]["id"] = "m2"
    lines.append(json.dumps(rewind))
    lines.append(
        json.dumps(
            {
                "uuid": "r2",
                "parentUuid": "r1",
                "type": "user",
                "message": {"role": "user", "content": [tool_result("toolu_a")]},
            }
        )
    )
    report = check_transcript(lines, "claude-code")
    assert not report.violations


def test_a_slice_whose_first_result_answers_an_earlier_file_is_undecided() -> None:
    lines = session(cc_user(tool_result("toolu_before")), cc_assistant("m1", text()))
    first = json.loads(lines[0])
    first["parentUuid"] = "a-line-in-an-earlier-file"
    lines[0] = json.dumps(first)
    report = check_transcript(lines, "claude-code")
    assert report.verdict == "undetermined"
    assert [(u.status, u.invariant, u.line) for u in report.undecided] == [
        ("outside-slice", "CLOSE-4", 1)
    ]
    assert report.passes(frozenset({"outside-slice"})) and not report.passes()


def test_a_stray_result_at_a_real_session_start_is_still_a_violation() -> None:
    lines = session(cc_user(tool_result("toolu_none")), cc_assistant("m1", text()))
    assert [v.invariant for v in check_transcript(lines, "claude-code").violations] == ["CLOSE-4"]


def test_a_claude_code_line_holding_two_records_is_split() -> None:
    lines = session(
        cc_user(), cc_assistant("m1", tool_use("toolu_a")), cc_user(tool_result("toolu_a"))
    )
    joined = [lines[0], lines[1] + lines[2]]
    report = check_transcript(joined, "claude-code")
    assert report.ok and report.events == 3
    assert [n.line for n in report.notes] == [2]


CODEX_ROLLOUT = [
    json.dumps(
        {
            "timestamp": "2025-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/"},
        }
    ),
    json.dumps({"timestamp": "2025-01-01T00:00:01Z", "type": "response_item", "payload": fc("c1")}),
]


@pytest.mark.parametrize("fmt", ["claude-code", "openai-responses", "anthropic", "openai-chat"])
def test_a_codex_rollout_is_refused_under_another_format(fmt: str) -> None:
    with pytest.raises(TranscriptFormatError):
        check_transcript(CODEX_ROLLOUT, fmt)  # type: ignore[arg-type]
