"""Adversarial hook payloads (Hypothesis): whatever Claude Code, or a broken
payload, sends, the hook never blocks by its exit code (always 0, never a
traceback), says each trouble in one line, prints only the documented
decision JSON, and refuses a call with an effect it cannot decide (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._call_decision import READ_ONLY_TOOLS
from metis_cli._hook_events import EVENTS
from metis_cli._hook_events import HookOptions
from metis_cli._hook_events import answer

from .test_hook import payload
from .test_hook import project  # noqa: F401  (the fixture)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_FIELDS = ("hook_event_name", "session_id", "cwd", "permission_mode", "tool_name",
           "tool_input", "tool_use_id", "tool_response", "stop_hook_active", "error")  # fmt: skip
_TOOLS = st.sampled_from(["Bash", "Read", "Write", "Edit", "Grep", "Glob", "WebFetch",
                          "mcp__s__t", "Task", "NewTool"])  # fmt: skip
_EVENTS = st.sampled_from([*EVENTS, "UserPromptSubmit", "Nope", ""])
_MUTATION = st.dictionaries(st.sampled_from(_FIELDS), st.one_of(st.just("DROP"), _JSON), max_size=3)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(tool=_TOOLS, event=st.just("PreToolUse") | _EVENTS, mutation=_MUTATION, record=st.booleans())
def test_any_payload_is_answered_without_blocking(
    project: Path,  # noqa: F811
    tool: str,
    event: str,
    mutation: dict[str, Any],
    record: bool,
) -> None:
    body = payload(project, tool, {"command": "rm -rf build", "file_path": str(project / "a"),
                                   "pattern": "x"}, hook_event_name=event)  # fmt: skip
    body["tool_response"] = "ok"
    for key, value in mutation.items():
        if value == "DROP":
            body.pop(key, None)
        else:
            body[key] = value
    result = answer(json.dumps(body).encode(), HookOptions(record=record))
    assert result.code == 0
    assert all("\n" not in w and "Traceback" not in w for w in result.warnings)
    if result.output is not None:
        specific = result.output["hookSpecificOutput"]
        assert body.get("hook_event_name") == "PreToolUse" or "PreToolUse" in json.dumps(body)
        assert specific["hookEventName"] == "PreToolUse"
        assert specific["permissionDecision"] in ("deny", "ask")
        assert specific["permissionDecisionReason"].startswith("metis: ")
    name = body.get("tool_name")
    undecidable = not isinstance(body.get("tool_input"), dict) or not isinstance(
        body.get("tool_use_id"), str
    )
    if (
        body.get("hook_event_name") == "PreToolUse"
        and undecidable
        and not (isinstance(name, str) and name.lower() in READ_ONLY_TOOLS)
    ):
        assert result.output is not None
        assert result.output["hookSpecificOutput"]["permissionDecision"] == "deny"
