"""OpenAI Responses output items the client executes, other than `function_call`,
as the runtime's tool calls, and their results as the matching input items.

Wire shapes: the openai-python SDK's `types/responses` (`response_output_item.py`,
`response_input_item_param.py`) and the Responses API reference
(https://platform.openai.com/docs/api-reference/responses/object); the
transcript checker classifies the same items (`metis_model/transcripts/_blocks.py`:
`RESPONSES_CLIENT_CALLS`, `RESPONSES_OUTPUTS`).

- `local_shell_call` (`action.command` argv, `env`, `working_directory`,
  `timeout_ms`): `bash`, the argv shell-quoted (`cd DIR && env K=V argv`);
  answered by `local_shell_call_output {call_id, output}`.
- `shell_call` (`action.commands`, `timeout_ms`), unless in a container:
  `bash`, the commands one per line; `shell_call_output {call_id, output:
  [{stdout, stderr, outcome}]}`.
- `apply_patch_call` (`operation {type, path, diff}`): `apply_patch` with the
  operation as input. The runtime has no such tool (its edit tool takes exact
  strings, not V4A diffs), so the call gets its one-line error result;
  `apply_patch_call_output {call_id, status: failed, output}`.
- `custom_tool_call` (`name`, free-form `input`, streamed by
  `response.custom_tool_call_input.delta`): the named tool; its input is the
  raw text when that is a JSON object, else `{"input": text}`;
  `custom_tool_call_output {call_id, output}`.
- `tool_search_call` with `execution: "client"`: `tool_search` with its
  `arguments`; no such tool, an error result; `tool_search_output {call_id,
  execution, tools: []}`. With the server executing it, it is the provider's.

The item itself goes back verbatim on the next request (`ToolUseBlock.wire`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

__all__ = ["CLIENT_ITEMS", "client_call", "client_output"]

CLIENT_ITEMS = frozenset(
    {"local_shell_call", "shell_call", "apply_patch_call", "custom_tool_call", "tool_search_call"}
)


def _seconds(action: Mapping[str, Any]) -> dict[str, Any]:
    ms = action.get("timeout_ms")
    if isinstance(ms, int | float) and not isinstance(ms, bool) and ms > 0:
        return {"timeout": ms / 1000}
    return {}


def _local_shell(action: Mapping[str, Any]) -> dict[str, Any]:
    argv = action.get("command")
    words = [w for w in argv if isinstance(w, str)] if isinstance(argv, list) else []
    command = shlex.join(words) if words else str(argv or "")
    env = action.get("env")
    if isinstance(env, Mapping) and env:
        pairs = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())
        command = f"env {pairs} {command}"
    where = action.get("working_directory")
    if isinstance(where, str) and where:
        command = f"cd {shlex.quote(where)} && {command}"
    return {"command": command, **_seconds(action)}


def _custom_input(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": text}


def client_call(
    item: Mapping[str, Any], custom_input: str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(tool name, input) of a client-executed item; None when the item is
    not one (a `shell_call` in a container, a server-run `tool_search_call`)."""
    kind = item.get("type")
    action = item.get("action")
    action = action if isinstance(action, Mapping) else {}
    if kind == "local_shell_call":
        return "bash", _local_shell(action)
    if kind == "shell_call":
        environment = item.get("environment")
        where = environment.get("type") if isinstance(environment, Mapping) else None
        if where not in (None, "local"):
            return None
        commands = action.get("commands")
        lines = [c for c in commands if isinstance(c, str)] if isinstance(commands, list) else []
        return "bash", {"command": "\n".join(lines), **_seconds(action)}
    if kind == "apply_patch_call":
        operation = item.get("operation")
        return "apply_patch", dict(operation) if isinstance(operation, Mapping) else {}
    if kind == "custom_tool_call":
        name = item.get("name")
        text = custom_input if custom_input is not None else item.get("input")
        return (name if isinstance(name, str) else ""), _custom_input(
            text if isinstance(text, str) else ""
        )
    if kind == "tool_search_call":
        if item.get("execution") != "client":
            return None
        arguments = item.get("arguments")
        return "tool_search", dict(arguments) if isinstance(arguments, Mapping) else {}
    return None


def client_output(
    wire: Mapping[str, Any], call_id: str, content: str, is_error: bool
) -> dict[str, Any]:
    """The input item answering the client call `wire` with a tool result."""
    kind = wire.get("type")
    if kind == "shell_call":
        outcome = {"type": "exit", "exit_code": 1 if is_error else 0}
        return {
            "type": "shell_call_output",
            "call_id": call_id,
            "output": [{"stdout": content, "stderr": "", "outcome": outcome}],
        }
    if kind == "apply_patch_call":
        status = "failed" if is_error else "completed"
        return {
            "type": "apply_patch_call_output",
            "call_id": call_id,
            "status": status,
            "output": content,
        }
    if kind == "tool_search_call":
        return {
            "type": "tool_search_output",
            "call_id": call_id,
            "execution": "client",
            "tools": [],
        }
    return {"type": f"{kind}_output", "call_id": call_id, "output": content}
