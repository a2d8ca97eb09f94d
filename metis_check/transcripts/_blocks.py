"""What each content block (Anthropic) or item (OpenAI Responses) type is to the check.

Every type of the current APIs is listed, so none is skipped unseen: a type
not listed here is read as neutral content and reported as a warning.

Anthropic block types: the official SDK's `types/content_block.py`,
`types/content_block_param.py` and their `types/beta/` counterparts
(https://github.com/anthropics/anthropic-sdk-python/tree/main/src/anthropic/types).
Responses item types: the union in the official SDK's
`types/responses/response_input_item_param.py` and `response_output_item.py`
(https://github.com/openai/openai-python/tree/main/src/openai/types/responses).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from typing import Literal

Role = Literal[
    "call",  # a client-executed call: needs a client result
    "server_call",  # a call the provider runs itself
    "result",  # a client's result for a call
    "server_result",  # the provider's result for one of its own calls
    "compaction",  # drops what came before it
    "content",  # anything else: text, thinking, images, ...
]

ANTHROPIC_SERVER_RESULTS = frozenset(
    {
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_result",
        "advisor_tool_result",
    }
)
ANTHROPIC_CONTENT = frozenset(
    {
        "text",
        "thinking",
        "redacted_thinking",
        "image",
        "document",
        "search_result",
        "container_upload",
        "fallback",
        "mcp_tool_listing",
        "tool_addition",
        "tool_removal",
        "tool_reference",
        "mid_conv_system",
    }
)
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")  # tool_use.id (ANT-6)
ANTHROPIC_SERVER_ID = re.compile(r"srvtoolu_[a-zA-Z0-9_]+")  # server_tool_use.id (ANT-6)


def anthropic_role(kind: Any) -> Role | None:
    """The block's role, or None for a type the API does not have."""
    if kind == "tool_use":
        return "call"
    if kind in ("server_tool_use", "mcp_tool_use"):
        return "server_call"
    if kind == "tool_result":
        return "result"
    if kind in ANTHROPIC_SERVER_RESULTS:
        return "server_result"
    if kind == "compaction":
        return "compaction"
    if kind in ANTHROPIC_CONTENT:
        return "content"
    return None


# Responses items. A call's output type is `<call>_output` except where listed.
RESPONSES_CLIENT_CALLS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "computer_call",
        "tool_search_call",
    }
)
RESPONSES_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
        "tool_search_output",
    }
)
RESPONSES_SERVER_CALLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
# A Responses `compaction` item stands for the window it replaced; what it
# means for items sent before it is not documented, so it is neutral content.
RESPONSES_MODEL_OTHER = frozenset({"reasoning", "compaction", "program", "program_output"})
RESPONSES_INPUT_OTHER = frozenset(
    {"compaction_trigger", "additional_tools", "configuration_update", "item_reference"}
)
RESPONSES_APPROVAL = ("mcp_approval_request", "mcp_approval_response")
# Codex rollouts (codex-rs/protocol/src/models.rs) write these too.
CODEX_ITEMS = frozenset({"ghost_snapshot", "compaction_summary", "context_compaction"})

Side = Literal["model", "input"]


def responses_role(item: Mapping[str, Any]) -> tuple[Side, Role] | None:
    """Which side of the conversation a Responses item is on, and its role.

    `tool_search_call` / `tool_search_output` are the client's only with
    `execution: "client"`; a `shell_call` is the client's unless its
    `environment` is a container (the server runs those).
    """
    kind = item.get("type")
    if kind is None and isinstance(item.get("role"), str):
        kind = "message"
    if kind == "message":
        return ("model" if item.get("role") == "assistant" else "input"), "content"
    if kind in ("tool_search_call", "tool_search_output") and item.get("execution") != "client":
        return ("model", "server_call") if kind == "tool_search_call" else ("model", "content")
    if kind == "shell_call":
        environment = item.get("environment")
        where = environment.get("type") if isinstance(environment, Mapping) else None
        return ("model", "call") if where in (None, "local") else ("model", "server_call")
    if kind in RESPONSES_CLIENT_CALLS:
        return "model", "call"
    if kind in RESPONSES_OUTPUTS:
        return "input", "result"
    if kind in RESPONSES_SERVER_CALLS:
        return "model", "server_call"
    if kind == RESPONSES_APPROVAL[0]:
        return "model", "server_call"
    if kind == RESPONSES_APPROVAL[1]:
        return "input", "server_result"  # answers the request by `approval_request_id`
    if kind in RESPONSES_MODEL_OTHER or kind in CODEX_ITEMS:
        return "model", "content"
    if kind in RESPONSES_INPUT_OTHER:
        return "input", "content"
    return None
