"""Reading and writing trace files (JSON Lines with a versioned header)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter

from ._errors import InputError
from ._errors import TraceFormatError
from ._events import FORMAT_NAME
from ._events import FORMAT_VERSION
from ._events import READ_VERSIONS
from ._events import TraceEvent
from ._events import TraceHeader
from ._jsonl import jsonl_schema
from ._strict_json import decode_json
from ._strict_json import json_lines
from ._validate import validate_strict

_EVENT_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)
_HEADER_ADAPTER: TypeAdapter[TraceHeader] = TypeAdapter(TraceHeader)


def _strict(schema: TypeAdapter[Any], text: str, line: int) -> Any:
    try:
        return validate_strict(schema, text, line=line)
    except InputError as exc:
        raise TraceFormatError(line, exc.message) from exc


def parse_event(obj: Any, line: int = 0) -> TraceEvent:
    """Validate one decoded JSON object as a trace event (strictly: no coercion)."""
    return parse_event_json(json.dumps(obj), line)


def parse_event_json(text: str, line: int = 0) -> TraceEvent:
    """One event from its JSON text, strictly: `"seq": "2"` is no integer."""
    event: TraceEvent = _strict(_EVENT_ADAPTER, text, line)
    return event


def parse_header(obj: Any, line: int = 1, text: str | None = None) -> TraceHeader:
    """The header from its decoded object (and its JSON text, when at hand)."""
    if not isinstance(obj, dict) or obj.get("kind") != "header":
        raise TraceFormatError(line, "first line must be the trace header (kind 'header')")
    if obj.get("format") != FORMAT_NAME:
        raise TraceFormatError(line, f"format must be {FORMAT_NAME!r}")
    version = obj.get("version")
    if version == 1:
        raise TraceFormatError(
            line,
            f"trace version 1 is not supported (this metis reads version {FORMAT_VERSION}): "
            "it lacks commit and hook events, footprints and the ids results carried, "
            "so RETRY-2, RETRY-3, CHILD-6, SCHED-6 and CLOSE-3/4 cannot be checked; "
            "record the run again",
        )
    if version not in READ_VERSIONS or isinstance(version, bool):
        readable = " or ".join(str(v) for v in READ_VERSIONS)
        raise TraceFormatError(line, f"unsupported trace version {version!r} (expected {readable})")
    header: TraceHeader = _strict(_HEADER_ADAPTER, json.dumps(obj) if text is None else text, line)
    return header


def _decode(text: str, line: int) -> Any:
    """Strict JSON (no NaN, bounded depth and integers, no duplicate keys)."""
    try:
        return decode_json(text, line=line)
    except InputError as exc:
        raise TraceFormatError(exc.line or line, exc.message) from exc


def read_trace(lines: Iterable[str]) -> tuple[TraceHeader, list[TraceEvent]]:
    """Parse a whole trace. Blank lines are ignored; line numbers stay exact.

    Give it lines split on "\n" only (a file's lines, or `text.split("\n")`):
    `str.splitlines` also splits inside JSON strings at U+2028 and friends."""
    header, events, _ = read_trace_numbered(lines)
    return header, events


def read_trace_numbered(
    lines: Iterable[str],
) -> tuple[TraceHeader, list[TraceEvent], list[int]]:
    """Like `read_trace`, plus the 1-based file line of every event."""
    header: TraceHeader | None = None
    events: list[TraceEvent] = []
    line_of: list[int] = []
    for number, text in json_lines(lines):
        obj = _decode(text, number)
        if header is None:
            header = parse_header(obj, number, text)
            continue
        event = parse_event_json(text, number)
        if event.seq != len(events):
            raise TraceFormatError(number, f"seq {event.seq} out of order (expected {len(events)})")
        events.append(event)
        line_of.append(number)
    if header is None:
        raise TraceFormatError(1, "empty trace: no header line")
    return header, events, line_of


def iter_trace_lines(header: TraceHeader, events: Sequence[TraceEvent]) -> Iterator[str]:
    """The JSONL lines of a trace, header first, without trailing newlines."""
    yield header.model_dump_json(exclude_defaults=False)
    for event in events:
        yield event.model_dump_json()


def dumps_trace(header: TraceHeader, events: Sequence[TraceEvent]) -> str:
    return "".join(line + "\n" for line in iter_trace_lines(header, events))


def trace_json_schema() -> dict[str, Any]:
    """The JSON Schema of the trace format, generated from the pydantic models."""
    return jsonl_schema(
        "metis trace (JSON Lines)",
        FORMAT_VERSION,
        TraceHeader,
        description=(
            "Line 1 is a TraceHeader; every following line is one TraceEvent. "
            "See specs/trace-format.md."
        ),
        event=_EVENT_ADAPTER.json_schema(),
    )
