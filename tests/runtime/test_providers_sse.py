"""The SSE decoder: the standard's line rules, and any chunking of recorded bodies."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from metis_runtime.providers import SSEDecoder
from metis_runtime.providers import SSEEvent
from metis_runtime.providers import parse_sse
from tests.runtime.test_providers_support import ANTHROPIC_MCP
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES_PHASE
from tests.runtime.test_providers_support import body


def feed_in_pieces(text: str, cuts: list[int], decoder: SSEDecoder | None = None) -> list[SSEEvent]:
    decoder = decoder if decoder is not None else SSEDecoder()
    out: list[SSEEvent] = []
    start = 0
    for cut in sorted(set(cuts)):
        out.extend(decoder.feed(text[start:cut]))
        start = cut
    out.extend(decoder.feed(text[start:]))
    return out + decoder.flush()


def test_fields_comments_and_multiline_data() -> None:
    text = (
        ": keep-alive comment\n"
        "event: message_start\n"
        'data: {"a":\n'
        "data:1}\n"
        "id: 7\n"
        "retry: 1000\n"
        "unknown: ignored\n"
        "\n"
        "data: [DONE]\n"
        "\n"
    )
    assert parse_sse(text) == [
        SSEEvent('{"a":\n1}', "message_start", "7"),
        SSEEvent("[DONE]", "message", "7"),  # the last event id carries over
    ]


def test_crlf_and_cr_line_endings() -> None:
    text = "event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r"
    assert parse_sse(text) == [SSEEvent("1", "a"), SSEEvent("2", "b")]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed("data: 1\r") == []
    assert decoder.feed("\n\r") == [SSEEvent("1")]
    assert decoder.feed("\ndata: 2\r\n\r\n") == [SSEEvent("2")]


def test_unterminated_last_event_is_dropped() -> None:
    # A cut stream must look cut: a final event without its blank line never counts.
    assert parse_sse('data: {"type":"message_stop"}') == []
    assert parse_sse('data: {"type":"message_stop"}\n') == []
    assert parse_sse("data: 1\n\ndata: 2") == [SSEEvent("1")]


def test_events_without_data_are_not_dispatched() -> None:
    assert parse_sse("event: ping\n\n: c\n\nid: 3\n\n") == []


def test_an_empty_data_field_is_dispatched() -> None:
    # The standard appends "" + LF to the data buffer: not empty, so it dispatches.
    assert parse_sse("data:\n\ndata\n\n") == [SSEEvent(""), SSEEvent("")]
    assert parse_sse("data\ndata\n\n") == [SSEEvent("\n")]


def test_one_space_after_the_colon_is_stripped_only() -> None:
    assert parse_sse("data:  two spaces\n\n") == [SSEEvent(" two spaces")]


@given(st.data())
def test_any_chunking_of_recorded_bodies_decodes_the_same(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from([body(ANTHROPIC_MCP), body(CHAT), body(RESPONSES_PHASE)]))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=40))
    whole = parse_sse(text)
    assert feed_in_pieces(text, cuts) == whole
    assert len(whole) == text.count("data:")
