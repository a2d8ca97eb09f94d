"""Each provider rule (specs/closure.md): one valid and one invalid example.

The invalid example is the smallest change to the valid one that the provider
rejects (or, for logs, that breaks the rule); it must be reported under the
rule's invariant with the rule's ID, and nothing else.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from metis_check.transcripts import check_transcript
from metis_check.transcripts._rules import BY_RULE
from metis_check.transcripts._rules import FORMAT_RULES
from metis_check.transcripts._rules import RULES
from metis_check.transcripts._rules import STRICT_RULES
from metis_model._invariants import BY_ID

SPEC = Path(__file__).resolve().parents[2] / "specs" / "closure.md"
Doc = Any


def tool_use(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "t", "input": {}}


def tool_result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


def text(t: str = "t") -> dict[str, Any]:
    return {"type": "text", "text": t}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def body(*messages: Any) -> Doc:
    return {"model": "m", "max_tokens": 1, "messages": list(messages)}


def fc(i: str, item_id: str | None = None) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}
    return item if item_id is None else {"id": item_id, **item}


def fco(i: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": i, "output": "ok"}


def inputs(*items: Any) -> Doc:
    return {"model": "m", "input": [{"role": "user", "content": "go"}, *items]}


def chat_call(i: str) -> dict[str, Any]:
    call = {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def tool_msg(i: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": i, "content": "ok"}


def chat(*messages: Any) -> Doc:
    return {"model": "m", "messages": [{"role": "user", "content": "go"}, *messages]}


def session(*lines: dict[str, Any]) -> list[str]:
    """Claude Code lines threaded in order (`parent` None starts a thread)."""
    out, last = [], None
    for n, line in enumerate(lines):
        record = {"uuid": f"u{n}", "parentUuid": last, "isSidechain": False, **line}
        if line.get("parentUuid", "keep") is None:
            record["parentUuid"] = None
        out.append(json.dumps(record))
        last = record["uuid"]
    return out


def cc_user(*blocks: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": list(blocks) or "hi"}}


def cc_assistant(msg: str, *blocks: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"id": msg, "role": "assistant", "content": list(blocks)},
    }


BOUNDARY = {"type": "system", "subtype": "compact_boundary", "parentUuid": None}
SERVER = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
SERVER_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
COMPACTION = {"type": "compaction", "content": "summary", "encrypted_content": "e"}


def request(*parts: Any) -> dict[str, Any]:
    return {"kind": "request", "parts": list(parts)}


def response(*parts: Any) -> dict[str, Any]:
    return {"kind": "response", "parts": list(parts)}


def pai_call(i: str, kind: str = "tool-call") -> dict[str, Any]:
    return {"part_kind": kind, "tool_name": "f", "args": {}, "tool_call_id": i}


def pai_return(i: str, kind: str = "tool-return") -> dict[str, Any]:
    return {"part_kind": kind, "tool_name": "f", "content": "ok", "tool_call_id": i}


PROMPT = {"part_kind": "user-prompt", "content": "go"}
DONE = {"part_kind": "text", "content": "done"}


def attr(key: str, value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value)
    return {"key": key, "value": {"stringValue": text}}


def span(op: str, start: int, end: int, attrs: dict[str, Any]) -> dict[str, Any]:
    keys = [
        attr("gen_ai.operation.name", op),
        *(attr(k, v) for k, v in attrs.items()),
    ]
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": keys,
    }


def chat_span(
    start: int, calls: list[str], answers: list[str], *, messages: bool = True
) -> dict[str, Any]:
    out = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": c, "name": "f"} for c in calls]}
    ]
    inputs = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    if answers:
        inputs += [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": a, "name": "f"} for a in answers],
            }
        ]
        inputs += [
            {
                "role": "tool",
                "parts": [
                    {"type": "tool_call_response", "id": a, "response": "ok"} for a in answers
                ],
            }
        ]
    extra = {"gen_ai.input.messages": inputs, "gen_ai.output.messages": out} if messages else {}
    return span("chat", start, start + 5, extra)


def spans(*items: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "t"}, "spans": list(items)}]}]}


def run_item(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "raw_item": raw, "agent": {"name": "a"}}


ASSISTANT = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "?"}],
}

# rule -> (format, valid, invalid); documents are JSON values, sessions are lines.
EXAMPLES: dict[str, tuple[str, Any, Any]] = {
    "ANT-1": (
        "anthropic",
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"))),
        body(user(text()), assistant(tool_use("a")), user(text("no result"))),
    ),
    "ANT-2": (
        "anthropic",
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"), text())),
        body(user(text()), assistant(tool_use("a")), user(text(), tool_result("a"))),
    ),
    "ANT-3": (
        "anthropic",
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"))),
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"), tool_result("z"))),
    ),
    "ANT-4": (
        "anthropic",
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"))),
        body(user(text()), assistant(tool_use("a")), user(tool_result("a"), tool_result("a"))),
    ),
    "ANT-5": (
        "anthropic",
        body(
            user(text()),
            assistant(tool_use("a")),
            user(tool_result("a")),
            assistant(tool_use("b")),
            user(tool_result("b")),
        ),
        body(
            user(text()),
            assistant(tool_use("a")),
            user(tool_result("a")),
            assistant(tool_use("a")),
            user(tool_result("a")),
        ),
    ),
    "ANT-6": (
        "anthropic",
        body(user(text()), assistant(tool_use("toolu_01-A")), user(tool_result("toolu_01-A"))),
        body(user(text()), assistant(tool_use("toolu.01")), user(tool_result("toolu.01"))),
    ),
    "ANT-7": (
        "anthropic",
        body(user(text()), assistant(SERVER, SERVER_RESULT, text())),
        body(user(text()), assistant(SERVER_RESULT, SERVER, text())),
    ),
    "ANT-8": (
        "anthropic",
        body(
            user(text()),
            assistant(tool_use("a")),
            user(tool_result("a")),
            assistant(COMPACTION, tool_use("b")),
            user(tool_result("b")),
        ),
        body(
            user(text()),
            assistant(tool_use("a"), COMPACTION),
            user(tool_result("a")),
        ),
    ),
    "CC-1": (
        "claude-code",
        session(
            cc_user(),
            cc_assistant("m1", tool_use("a")),
            cc_user(tool_result("a")),
            BOUNDARY,
            cc_user(),
            cc_assistant("m2", text()),
        ),
        session(
            cc_user(),
            cc_assistant("m1", tool_use("a")),
            BOUNDARY,
            cc_user(tool_result("a")),
            cc_assistant("m2", text()),
        ),
    ),
    "OAC-1": (
        "openai-chat",
        chat(chat_call("a"), tool_msg("a"), {"role": "assistant", "content": "done"}),
        chat(chat_call("a"), {"role": "user", "content": "and?"}),
    ),
    "OAC-2": (
        "openai-chat",
        chat(chat_call("a"), tool_msg("a")),
        chat(chat_call("a"), tool_msg("a"), {"role": "user", "content": "x"}, tool_msg("z")),
    ),
    "PAI-1": (
        "pydantic-ai",
        [request(PROMPT), response(pai_call("a")), request(pai_return("a")), response(DONE)],
        [request(PROMPT), response(pai_call("a")), request(PROMPT), response(DONE)],
    ),
    "PAI-2": (
        "pydantic-ai",
        [request(PROMPT), response(pai_call("a")), request(pai_return("a")), response(DONE)],
        [request(PROMPT), response(pai_call("a")), request(pai_return("a"), pai_return("z"))],
    ),
    "PAI-3": (
        "pydantic-ai",
        [
            request(PROMPT),
            response(pai_call("s", "builtin-tool-call"), pai_return("s", "builtin-tool-return")),
        ],
        [
            request(PROMPT),
            response(pai_return("s", "builtin-tool-return"), pai_call("s", "builtin-tool-call")),
        ],
    ),
    "OAS-1": (
        "openai-agents",
        [run_item("tool_call_item", fc("a")), run_item("tool_call_output_item", fco("a"))],
        [
            run_item("tool_call_item", fc("a")),
            run_item("input_item", {"role": "user", "content": "and?"}),
            run_item("message_output_item", ASSISTANT),
        ],
    ),
    "OAS-2": (
        "openai-agents",
        [run_item("handoff_call_item", fc("h")), run_item("handoff_output_item", fco("h"))],
        [run_item("handoff_call_item", fc("h")), run_item("handoff_output_item", fco("z"))],
    ),
    "OTEL-1": (
        "otel",
        spans(chat_span(10, ["call_1"], []), chat_span(20, [], ["call_1"])),
        spans(chat_span(10, ["call_1"], []), chat_span(20, [], [])),
    ),
    "OTEL-2": (
        "otel",
        spans(chat_span(10, ["call_1"], []), chat_span(20, [], ["call_1"])),
        spans(chat_span(10, ["call_1"], []), chat_span(20, [], ["call_1", "call_9"])),
    ),
    "OAR-1": (
        "openai-responses",
        inputs(fc("a"), fco("a")),
        inputs(fc("a")),
    ),
    "OAR-2": (
        "openai-responses",
        inputs(fc("a"), fco("a")),
        inputs(fc("a"), fco("a"), fco("z")),
    ),
    "OAR-3": (
        "openai-responses",
        inputs(fc("a"), fco("a")),
        inputs(fc("a"), fco("a"), fco("a")),
    ),
    "OAR-4": (
        "openai-responses",
        inputs(fc("a"), fco("a"), {"role": "user", "content": "again"}, fc("b"), fco("b")),
        inputs(fc("a"), fco("a"), {"role": "user", "content": "again"}, fc("a"), fco("a")),
    ),
    "OAR-5": (
        "openai-responses",
        inputs(fc("a", "fc_1"), fco("a"), fc("b", "fc_2"), fco("b")),
        inputs(fc("a", "fc_1"), fco("a"), fc("b", "fc_1"), fco("b")),
    ),
    "OAR-6": (
        "openai-responses",
        inputs(fc("a"), fc("b"), fco("a"), fco("b"), {"role": "user", "content": "a note"}),
        inputs(fc("a"), fc("b"), {"role": "user", "content": "a note"}, fco("a"), fco("b")),
    ),
}


# The rules only the strict reading holds (`check_transcript(..., strict=True)`).
STRICT = {r for rules in STRICT_RULES.values() for r in attrs.asdict(rules).values() if r} - {
    r for rules in FORMAT_RULES.values() for r in attrs.asdict(rules).values() if r
}


def _lines(value: Any) -> list[str]:
    """Session lines as they are; any other example as pretty-printed JSON."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return json.dumps(value, indent=1).splitlines()


def test_every_rule_has_an_example_pair_and_a_known_invariant() -> None:
    assert set(EXAMPLES) == set(BY_RULE)
    for rule in RULES:
        assert rule.invariant in BY_ID, rule.id
        assert rule.sources and all(s.startswith("https://") for s in rule.sources), rule.id
    formats = [*FORMAT_RULES.values(), *STRICT_RULES.values()]
    used = {r for rules in formats for r in attrs.asdict(rules).values() if r}
    assert used <= set(BY_RULE)


@pytest.mark.parametrize("rule_id", sorted(EXAMPLES))
def test_valid_example_passes_and_invalid_breaks_exactly_its_rule(rule_id: str) -> None:
    fmt, valid, invalid = EXAMPLES[rule_id]
    strict = rule_id in STRICT  # a strict provider's rule: held only when asked
    good = check_transcript(_lines(valid), fmt, strict=strict)  # type: ignore[arg-type]
    assert good.ok, [v.one_line() for v in good.violations]
    bad = check_transcript(_lines(invalid), fmt, strict=strict)  # type: ignore[arg-type]
    rule = BY_RULE[rule_id]
    found = {(v.invariant, v.rule) for v in bad.violations}
    assert (rule.invariant, rule_id) in found, [v.one_line() for v in bad.violations]
    assert all(v.rule for v in bad.violations)  # every finding names its provider rule


def test_the_spec_table_lists_every_rule_with_its_sources() -> None:
    spec = SPEC.read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (\w+-\d+) \|.*$", spec, re.M)}
    for rule in RULES:
        assert rule.id in rows, rule.id
        assert f"| {rule.invariant} |" in rows[rule.id], rule.id
        for source in rule.sources:
            assert source in rows[rule.id], (rule.id, source)


def test_a_strict_providers_rule_is_held_only_when_asked() -> None:
    fmt, _, invalid = EXAMPLES["OAR-6"]
    assert check_transcript(_lines(invalid), fmt).ok  # type: ignore[arg-type]  # OpenAI pairs by call_id
    assert not check_transcript(_lines(invalid), fmt, strict=True).ok  # type: ignore[arg-type]


def test_metis_conform_strict_holds_a_strict_providers_rule(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from metis_cli._conform import conform

    _, _, invalid = EXAMPLES["OAR-6"]
    body = tmp_path / "request.json"
    body.write_text(json.dumps(invalid))
    lax = CliRunner().invoke(conform, ["--format", "openai-responses", str(body)])
    assert lax.exit_code == 0, lax.output  # OpenAI's own reading
    strict = CliRunner().invoke(conform, ["--format", "openai-responses", "--strict", str(body)])
    assert strict.exit_code == 1 and "OAR-6" in strict.output, strict.output
