"""The providers' request rules, each with its own ID and its source.

A transcript is held to the rules of the provider it was (or will be) sent
to. Each rule instantiates one of metis's invariants (CLOSE-1, -2, -4, -6, -7,
-9) and a violation names both: `CLOSE-9 (ANT-5)`. `specs/closure.md` has the
table; `tests/conformance/test_provider_rules.py` has one valid and one invalid
example per rule.

`Doc` rules are stated in the provider's documentation or official SDK types;
`Obs` rules are known from the errors the provider returns, as reported in
public issues (the quoted error is in the spec table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

K = "https://github.com/anthropics/claude-code/issues/"
P = "https://platform.claude.com/docs/en/"
SDK_A = "https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/"
PAI = "https://github.com/pydantic/pydantic-ai/blob/main/pydantic_ai_slim/pydantic_ai/"
OAS = "https://github.com/openai/openai-agents-python/blob/main/src/agents/"
GENAI = "https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/"


@attrs.frozen
class Rule:
    id: str
    invariant: str
    basis: Literal["Doc", "Obs"]
    statement: str
    sources: tuple[str, ...]


_R = Rule

RULES: tuple[Rule, ...] = (
    # Anthropic Messages API (also what a Claude Code session is sent as).
    _R(
        "ANT-1",
        "CLOSE-2",
        "Doc",
        "Every `tool_use` is answered by a `tool_result` with its id in the next message "
        "(consecutive messages of one role are combined into one turn).",
        (P + "agents-and-tools/tool-use/handle-tool-calls", K + "2697"),
    ),
    _R(
        "ANT-2",
        "CLOSE-2",
        "Doc",
        "In that message every `tool_result` comes before any other block; a result after "
        "text (or any other block) does not answer its call.",
        (P + "agents-and-tools/tool-use/handle-tool-calls",),
    ),
    _R(
        "ANT-3",
        "CLOSE-4",
        "Obs",
        "Every `tool_result` answers a `tool_use` of the assistant message right before it.",
        (K + "13460",),
    ),
    _R(
        "ANT-4",
        "CLOSE-1",
        "Doc",
        "A `tool_use` gets one `tool_result`.",
        (
            P + "agents-and-tools/tool-use/handle-tool-calls",
            SDK_A + "types/tool_result_block_param.py",
        ),
    ),
    _R(
        "ANT-5",
        "CLOSE-9",
        "Obs",
        "`tool_use` ids are unique across the whole request, not only within one message "
        "(within one message it is also CLOSE-7).",
        (K + "21317", K + "20901", K + "28515"),
    ),
    _R(
        "ANT-6",
        "CLOSE-9",
        "Obs",
        "A `tool_use` id matches `^[a-zA-Z0-9_-]+$`; a `server_tool_use` id matches "
        "`^srvtoolu_[a-zA-Z0-9_]+$`.",
        (
            "https://github.com/RooCodeInc/Roo-Code/pull/10649",
            "https://github.com/ding113/claude-code-hub/issues/470",
        ),
    ),
    _R(
        "ANT-7",
        "CLOSE-4",
        "Obs",
        "A server tool's result block (`web_search_tool_result`, `mcp_tool_result`, "
        "`advisor_tool_result`, ...) follows its `server_tool_use` / `mcp_tool_use`, once.",
        (K + "64383", P + "agents-and-tools/tool-use/server-tools"),
    ),
    _R(
        "ANT-8",
        "CLOSE-6",
        "Doc",
        "A `compaction` block sent back makes the API drop every block before it, so a call "
        "before it cannot be answered after it.",
        ("https://platform.claude.com/docs/zh-CN/build-with-claude/compaction-threshold",),
    ),
    # Claude Code sessions.
    _R(
        "CC-1",
        "CLOSE-6",
        "Obs",
        "A `compact_boundary` starts a new thread: no call open at the boundary is answered "
        "after it.",
        (K + "42810", K + "40027"),
    ),
    # OpenAI Chat Completions.
    _R(
        "OAC-1",
        "CLOSE-2",
        "Obs",
        "An assistant message with `tool_calls` is followed by `tool` messages answering "
        "each `tool_call_id`.",
        ("https://github.com/router-for-me/CLIProxyAPI/issues/2798",),
    ),
    _R(
        "OAC-2",
        "CLOSE-4",
        "Obs",
        "A `tool` message answers a `tool_calls` entry of the assistant message before its run.",
        ("https://github.com/smarter-sh/smarter/issues/264",),
    ),
    # OpenAI Responses API (also Codex rollouts and OpenAI Agents SDK run items).
    _R(
        "OAR-1",
        "CLOSE-2",
        "Obs",
        "Every client-executed call item (`function_call`, `custom_tool_call`, "
        "`local_shell_call`, `shell_call` in a local environment, `apply_patch_call`, "
        "`computer_call`, `tool_search_call` with `execution: client`) has its output item "
        "before the next model turn.",
        (
            "https://github.com/router-for-me/CLIProxyAPI/issues/2368",
            "https://github.com/openai/openai-agents-python/pull/1855",
            "https://github.com/diegosouzapw/OmniRoute/issues/8946",
        ),
    ),
    _R(
        "OAR-2",
        "CLOSE-4",
        "Obs",
        "Every output item answers a call item with its `call_id` (a `local_shell_call_output` "
        "too: the server reads `call_id`, not the SDK type's `id`).",
        (
            "https://github.com/continuedev/continue/issues/10092",
            "https://github.com/openai/openai-agents-python/pull/1855",
        ),
    ),
    _R(
        "OAR-3",
        "CLOSE-1",
        "Obs",
        "Each call has exactly one matching output.",
        ("https://github.com/NousResearch/hermes-agent/issues/102629",),
    ),
    _R(
        "OAR-4",
        "CLOSE-9",
        "Obs",
        "A `call_id` belongs to one call item in the whole input, not one per turn.",
        ("https://github.com/NousResearch/hermes-agent/issues/102629",),
    ),
    _R(
        "OAR-5",
        "CLOSE-9",
        "Obs",
        "Item `id`s are unique across the input.",
        (
            "https://github.com/openai/openai-agents-python/issues/1789",
            "https://github.com/vercel/ai/pull/13383",
        ),
    ),
    _R(
        "OAR-6",
        "CLOSE-2",
        "Obs",
        "In a request, between the call items and their output items stand no other "
        "items: strict Responses providers (DeepSeek's) reject a `message` or `reasoning` "
        "item there with HTTP 400 'No tool output found for tool call', though OpenAI "
        "pairs by `call_id` wherever the output stands.",
        (
            "https://github.com/deepseek-ai/awesome-deepseek-integration/issues/740",
            "https://github.com/kolega-ai/kolega-code/pull/403",
            "https://github.com/MayDay-wpf/snow-app/pull/9",
        ),
    ),
    # pydantic-ai message history.
    _R(
        "PAI-1",
        "CLOSE-2",
        "Doc",
        "A `tool-call` part is answered in the next `ModelRequest` by a `tool-return`, or a "
        "`retry-prompt` with its `tool_name`, carrying its `tool_call_id`.",
        (PAI + "_agent_graph.py", PAI + "messages.py"),
    ),
    _R(
        "PAI-2",
        "CLOSE-4",
        "Doc",
        "A `tool-return` (or a `retry-prompt` naming a tool) answers a `tool-call` of the "
        "response right before it; pydantic-ai drops any other one before sending.",
        (PAI + "_agent_graph.py",),
    ),
    _R(
        "PAI-3",
        "CLOSE-4",
        "Doc",
        "A `builtin-tool-return` follows its `builtin-tool-call` in the same response.",
        (PAI + "messages.py",),
    ),
    # OpenAI Agents SDK run items.
    _R(
        "OAS-1",
        "CLOSE-2",
        "Doc",
        "A `tool_call_item` (or `handoff_call_item`, `tool_search_call_item`) is answered by "
        "its output item with the raw item's `call_id` before the next model response; "
        "`to_input_list` sends both to the Responses API.",
        (OAS + "items.py", OAS + "run_internal/items.py"),
    ),
    _R(
        "OAS-2",
        "CLOSE-4",
        "Doc",
        "An output item answers a call item with its `call_id`.",
        (OAS + "items.py",),
    ),
    # OpenTelemetry GenAI spans.
    _R(
        "OTEL-1",
        "CLOSE-2",
        "Doc",
        "A `tool_call` part of an inference span's `gen_ai.output.messages` is answered by a "
        "`tool_call_response` part with its id in the next inference span's "
        "`gen_ai.input.messages`, or by an `execute_tool` span with that "
        "`gen_ai.tool.call.id` that ends before the next inference span starts.",
        (GENAI + "gen-ai-spans.md", GENAI + "gen-ai-input-messages.json"),
    ),
    _R(
        "OTEL-2",
        "CLOSE-4",
        "Doc",
        "A `tool_call_response` part, or an `execute_tool` span's `gen_ai.tool.call.id`, "
        "answers a `tool_call` of the inference span before it.",
        (GENAI + "gen-ai-spans.md", GENAI + "gen-ai-output-messages.json"),
    ),
)

BY_RULE: Mapping[str, Rule] = {r.id: r for r in RULES}


@attrs.frozen
class FormatRules:
    """Which rule each kind of finding breaks in one format ("" where none applies).

    `reused_ids`: the provider rejects a call id reused anywhere in the request
    (CLOSE-9); where it is "", a reused id pairs by position, as the format allows.
    """

    unanswered: str = ""  # CLOSE-2: a call without its result where one is due
    results_first: str = ""  # CLOSE-2: a result after another block
    stray: str = ""  # CLOSE-4: a result that answers no call before it
    second: str = ""  # CLOSE-1: a second result for one call
    within_message: str = ""  # CLOSE-7: an id twice in one assistant message
    reused_ids: str = ""  # CLOSE-9: an id reused across the request
    server_stray: str = ""  # CLOSE-4: a server tool's result without its server call
    compaction: str = ""  # CLOSE-6: a compaction separates a call from its result


_ANTHROPIC = FormatRules(
    unanswered="ANT-1",
    results_first="ANT-2",
    stray="ANT-3",
    second="ANT-4",
    within_message="ANT-5",
    reused_ids="ANT-5",
    server_stray="ANT-7",
    compaction="ANT-8",
)
_RESPONSES = FormatRules(
    unanswered="OAR-1",
    stray="OAR-2",
    second="OAR-3",
    within_message="OAR-4",
    reused_ids="OAR-4",
)

# What every provider of a wire accepts, where the wire's own provider is
# laxer (`check_transcript(..., strict=True)`): metis holds the bodies its own
# runtime posts to these (explore's `_wire.py`), since `--base-url` may name
# any provider of the wire; a user's OpenAI transcript is read by OpenAI's
# rules, which pair a Responses output with its call wherever it stands.
STRICT_RULES: Mapping[str, FormatRules] = {
    "openai-responses": attrs.evolve(_RESPONSES, results_first="OAR-6"),
}

FORMAT_RULES: Mapping[str, FormatRules] = {
    "anthropic": _ANTHROPIC,
    "claude-code": attrs.evolve(_ANTHROPIC, compaction="CC-1"),
    "openai-chat": FormatRules(unanswered="OAC-1", stray="OAC-2"),
    "openai-responses": _RESPONSES,
    "codex": _RESPONSES,
    "otel": FormatRules(unanswered="OTEL-1", stray="OTEL-2"),
    "openai-agents": attrs.evolve(_RESPONSES, unanswered="OAS-1", stray="OAS-2"),
    "pydantic-ai": FormatRules(
        unanswered="PAI-1", stray="PAI-2", second="PAI-2", server_stray="PAI-3"
    ),
}
