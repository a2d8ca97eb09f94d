"""The SSE decoder against the WHATWG standard's own algorithm.

`reference` below is "Interpreting an event stream"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
written as plainly as the standard states it, on a whole text; the decoder
must give the same events however its input is chunked, on generated
streams and on every recorded stream in the corpora.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime.providers import SSEDecoder
from metis_runtime.providers import SSEEvent
from metis_runtime.providers import parse_sse
from tests.runtime.test_providers_sse import feed_in_pieces

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "provider-streams"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora/provider-streams")


def reference(stream: str) -> tuple[list[SSEEvent], int | None]:
    """The standard's algorithm: returns the dispatched events and the
    reconnection time."""
    if stream.startswith("\ufeff"):
        stream = stream[1:]
    # Lines end at CRLF, LF or CR; what follows the last line end is no line.
    lines = re.split(r"\r\n|\n|\r", stream)[:-1]
    events: list[SSEEvent] = []
    data, event_type, last_id, retry = "", "", None, None
    for line in lines:
        if line == "":
            if data == "":
                event_type = ""
                continue
            if data.endswith("\n"):
                data = data[:-1]
            events.append(SSEEvent(data, event_type or "message", last_id))
            data, event_type = "", ""
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            event_type = value
        elif field == "data":
            data += value + "\n"
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value)
    return events, retry


def _decode(text: str, cuts: list[int]) -> tuple[list[SSEEvent], int | None]:
    decoder = SSEDecoder()
    return feed_in_pieces(text, cuts, decoder), decoder.retry


_PIECES = st.sampled_from(
    ["data", "data:", "data: ", "event:", "event: x", "id:", "id: 7", "id: a\0b", "retry:",
     "retry: 1500", "retry: 15x", ":", ": comment", "x", " ", "\ufeff", "é", ":data", "DATA:",
     "\n", "\r", "\r\n", "\n\n", "\r\r"]
)  # fmt: skip


@given(st.lists(_PIECES, max_size=30).map("".join), st.lists(st.integers(0, 400), max_size=12))
def test_the_decoder_is_the_standards_algorithm(text: str, cuts: list[int]) -> None:
    assert _decode(text, cuts) == reference(text)


def test_a_leading_byte_order_mark_is_dropped_once() -> None:
    assert parse_sse("\ufeffdata: 1\n\n") == [SSEEvent("1")]
    assert parse_sse("\ufeff\ufeffdata: 1\n\n") == []  # the second is part of a field name


def test_retry_ids_with_nul_and_fields_without_a_colon() -> None:
    decoder = SSEDecoder()
    events = decoder.feed("retry: 2500\nid: 1\ndata\n\nid: x\0y\nretry: soon\ndata: 2\n\n")
    assert events == [SSEEvent("", "message", "1"), SSEEvent("2", "message", "1")]
    assert decoder.retry == 2500


@cache
def _bodies() -> list[str]:
    found = []
    for path in sorted(CORPORA.rglob("*.yaml")):
        data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        for interaction in data["interactions"]:
            found.append(interaction["response"]["body"]["string"])
    return found


@given(st.data())
def test_every_recorded_stream_decodes_as_the_standard_says(data: st.DataObject) -> None:
    bodies = _bodies()
    assert len(bodies) >= 10
    text = data.draw(st.sampled_from(bodies))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=30))
    decoded = _decode(text, cuts)
    assert decoded == reference(text)
    assert len(decoded[0]) == len(re.findall(r"^data:", text, re.M))


def test_a_long_line_is_joined_once_not_per_chunk() -> None:
    """What makes the decoder linear (timed in benchmarks/bench_sse.py): the
    pieces of an unfinished line are kept, not joined to each new chunk."""
    decoder = SSEDecoder()
    pieces = ["data: ", *["x" * 1024] * 2000]
    for i, piece in enumerate(pieces, 1):
        assert decoder.feed(piece) == []
        assert len(decoder._pending) == i  # one more piece, nothing re-joined
    (event,) = decoder.feed("\n\n")
    assert len(event.data) == 2000 * 1024 and decoder._pending == []
