"""Reading and writing trace files (JSON Lines with a versioned header)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .._errors import TraceFormatError
from ._events import FORMAT_NAME, FORMAT_VERSION, TraceEvent, TraceHeader

_EVENT_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "event"
    return f"{where}: {err['msg']}"


def parse_event(obj: Any, line: int = 0) -> TraceEvent:
    """Validate one decoded JSON object as a trace event."""
    try:
        return _EVENT_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        raise TraceFormatError(line, _first_error(exc)) from exc


def parse_header(obj: Any, line: int = 1) -> TraceHeader:
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
    if version != FORMAT_VERSION:
        raise TraceFormatError(
            line, f"unsupported trace version {version!r} (expected {FORMAT_VERSION})"
        )
    try:
        return TraceHeader.model_validate(obj)
    except ValidationError as exc:
        raise TraceFormatError(line, _first_error(exc)) from exc


def _decode(text: str, line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(line, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc


def read_trace(lines: Iterable[str]) -> tuple[TraceHeader, list[TraceEvent]]:
    """Parse a whole trace. Blank lines are ignored; line numbers stay exact."""
    header, events, _ = read_trace_numbered(lines)
    return header, events


def read_trace_numbered(
    lines: Iterable[str],
) -> tuple[TraceHeader, list[TraceEvent], list[int]]:
    """Like `read_trace`, plus the 1-based file line of every event."""
    header: TraceHeader | None = None
    events: list[TraceEvent] = []
    line_of: list[int] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        obj = _decode(text, number)
        if header is None:
            header = parse_header(obj, number)
            continue
        event = parse_event(obj, number)
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
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "metis trace (JSON Lines)",
        "description": (
            "Line 1 is a TraceHeader; every following line is one TraceEvent. "
            "See specs/trace-format.md."
        ),
        "version": FORMAT_VERSION,
        "header": TraceHeader.model_json_schema(),
        "event": _EVENT_ADAPTER.json_schema(),
    }
