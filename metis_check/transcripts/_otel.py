"""Reader for OpenTelemetry GenAI spans in OTLP JSON (one `TracesData` per line).

Any runtime instrumented with the GenAI semantic conventions
(open-telemetry/semantic-conventions-genai, `docs/gen-ai/gen-ai-spans.md`) can
be checked: its spans, exported as OTLP JSON (the file exporter's JSON Lines,
or one document), are grouped into conversations (`gen_ai.conversation.id`,
else the trace) and ordered by start time. Then, per conversation:

* each inference span (`gen_ai.operation.name` `chat`, `generate_content`,
  `text_completion`) is a model turn; its calls are the `tool_call` parts of
  `gen_ai.output.messages` (with their `id`);
* the results sent with an inference span are the `tool_call_response` parts
  of its `gen_ai.input.messages` after the last assistant message; where the
  span records no messages (content capture is opt-in), they are the
  `execute_tool` spans (`gen_ai.tool.call.id`) that ended after the previous
  inference span started and before this one started (OTEL-1, OTEL-2);
* `execute_tool` spans after the last inference span answer its calls.

Where messages are recorded, `execute_tool` spans are not read (the messages
say what was sent); a span set without either has no calls to check.

Messages may be recorded as a JSON string or as a structured value; ids are
hex, and 64-bit integers strings or numbers, as OTLP/JSON allows. A span set is
a log: calls open at the end are undecided. Line numbers are those of the span.
"""

from __future__ import annotations

import json
from collections import Counter
from collections import defaultdict
from typing import Any

import attrs

from metis_trace import TranscriptFormatError

from .._report import Note
from ._api import _notes_for_shared_lines
from ._api import mark_open_ends
from ._locate import LEAF
from ._locate import Located
from ._locate import Want
from ._tree import Occ
from ._tree import Parsed
from ._tree import Tree

_SPANS = Want(keys={"spans": Want(each=LEAF)})
TOP = Want(keys={"resourceSpans": Want(each=Want(keys={"scopeSpans": Want(each=_SPANS)}))})
INFERENCE = frozenset({"chat", "generate_content", "text_completion"})


@attrs.frozen
class _Span:
    line: int
    start: int
    end: int
    group: str
    operation: str
    attributes: dict[str, Any]


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as plain JSON."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {
            kv.get("key"): any_value(kv.get("value"))
            for kv in value["kvlistValue"].get("values", [])
        }
    return None


def _nanos(value: Any, line: int, source: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise TranscriptFormatError(line, "a span's time must be an integer of nanoseconds", source)


def _spans(docs: list[Located], source: str) -> list[_Span]:
    found: list[_Span] = []
    for doc in docs:
        if not isinstance(doc.value, dict) or "resourceSpans" not in doc.value:
            raise TranscriptFormatError(doc.line, "expected OTLP JSON with 'resourceSpans'", source)
        for resource in doc.fields["resourceSpans"].items:
            for scope in resource.fields.get("scopeSpans", Located([], resource.line)).items:
                for span, line in scope.parts("spans"):
                    if not isinstance(span, dict):
                        raise TranscriptFormatError(line, "a span must be a JSON object", source)
                    attributes = {
                        str(a.get("key")): any_value(a.get("value"))
                        for a in span.get("attributes", [])
                        if isinstance(a, dict)
                    }
                    operation = attributes.get("gen_ai.operation.name")
                    if not isinstance(operation, str):
                        continue  # not a GenAI span
                    group = attributes.get("gen_ai.conversation.id") or span.get("traceId") or ""
                    found.append(
                        _Span(
                            line,
                            _nanos(span.get("startTimeUnixNano", 0), line, source),
                            _nanos(span.get("endTimeUnixNano", 0), line, source),
                            str(group),
                            operation,
                            attributes,
                        )
                    )
    return found


def _messages(span: _Span, key: str, source: str) -> list[Any] | None:
    raw = span.attributes.get(key)
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TranscriptFormatError(
                span.line, f"{key} is not JSON ({exc.msg})", source
            ) from exc
    if not isinstance(raw, list):
        raise TranscriptFormatError(span.line, f"{key} must be a list of messages", source)
    return raw


def _parts(messages: list[Any], kind: str) -> list[dict[str, Any]]:
    return [
        part
        for message in messages
        if isinstance(message, dict)
        for part in message.get("parts", [])
        if isinstance(part, dict) and part.get("type") == kind
    ]


def _sent_results(messages: list[Any]) -> list[dict[str, Any]]:
    """The tool_call_response parts after the last assistant message: what this request added."""
    last = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"),
        default=-1,
    )
    return _parts(messages[last + 1 :], "tool_call_response")


def read_spans(docs: list[Located], source: str) -> Parsed:
    parsed = Parsed(Tree(), 0, Counter(), notes=_notes_for_shared_lines(docs))
    groups: dict[str, list[_Span]] = defaultdict(list)
    for span in _spans(docs, source):
        groups[span.group].append(span)
        parsed.kinds[f"span:{span.operation}"] += 1
    if not groups:
        raise TranscriptFormatError(1, "no GenAI span (gen_ai.operation.name) in the input", source)
    for spans in groups.values():
        spans.sort(key=lambda s: (s.start, s.end))
        _conversation(parsed, spans, source)
    return mark_open_ends(parsed)


def _conversation(parsed: Parsed, spans: list[_Span], source: str) -> None:
    tree = parsed.tree
    inference = [s for s in spans if s.operation in INFERENCE]
    tools = [s for s in spans if s.operation == "execute_tool"]
    current: int | None = None
    previous_start: int | None = None
    calls_known = False  # did the previous inference span record its output messages?
    for span in inference:
        parsed.records += 1
        inputs = _messages(span, "gen_ai.input.messages", source)
        if inputs is not None:
            answers = [
                (str(p.get("id")), span.line)
                for p in _sent_results(inputs)
                if p.get("id") is not None
            ]
        else:
            answers = [
                (str(t.attributes["gen_ai.tool.call.id"]), t.line)
                for t in tools
                if "gen_ai.tool.call.id" in t.attributes
                and previous_start is not None
                and previous_start <= t.end <= span.start
            ]
        if current is not None:
            current = tree.add("input", current, span.line, parsed.records - 1)
            if calls_known:  # results of calls that were not recorded cannot be paired
                tree.nodes[current].results.extend(
                    Occ(i, line, parsed.records - 1) for i, line in answers
                )
        current = tree.add("model", current, span.line, parsed.records - 1)
        outputs = _messages(span, "gen_ai.output.messages", source)
        calls_known = outputs is not None
        if outputs is None:
            parsed.notes.append(
                Note(
                    span.line,
                    "an inference span without gen_ai.output.messages: its calls are not recorded",
                )
            )
            outputs = []
        for part in _parts(outputs, "tool_call"):
            if part.get("id") is not None:
                tree.nodes[current].calls.append(
                    Occ(str(part["id"]), span.line, parsed.records - 1)
                )
        previous_start = span.start
    last_start = previous_start
    trailing = [
        t
        for t in tools
        if last_start is not None
        and t.end >= last_start
        and "gen_ai.tool.call.id" in t.attributes
        and not any(s.start >= t.end for s in inference)
    ]
    if current is not None and trailing and calls_known:
        current = tree.add("input", current, trailing[0].line, parsed.records)
        tree.nodes[current].results.extend(
            Occ(str(t.attributes["gen_ai.tool.call.id"]), t.line, parsed.records) for t in trailing
        )
    parsed.records += len(tools)
