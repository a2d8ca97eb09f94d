"""An incremental server-sent-events decoder, as the WHATWG HTML standard
specifies it ("Interpreting an event stream",
https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).

Fed text in arbitrary chunks; yields one `SSEEvent` per dispatched event:
- a line ends at CRLF, LF or CR (a CRLF split across two chunks is one end);
  one leading U+FEFF (byte order mark) of the stream is dropped;
- a line starting with `:` is a comment; otherwise the field name runs to
  the first `:` (or is the whole line, with an empty value), and a single
  leading space of the value is removed;
- `data` appends its value (an empty `data:` too: its event is dispatched
  with empty data); `event` sets the type; `id` sets the last event id
  unless the value holds U+0000, and the id carries over to later events;
  `retry` sets `retry` (the reconnection time in ms) when the value is all
  ASCII digits; other fields are ignored;
- a blank line dispatches the event if a `data` field was seen; an event
  still unterminated at the end of input is dropped, as the standard says,
  so a cut stream looks cut to the adapters, never half-parsed.

Linear in the input however it is chunked: a chunk without a line end is
kept aside, and the pieces of a line are joined once, when it ends (the
decoder it replaces joined the whole pending text on every chunk, so a 2 MB
line in 1 KB chunks cost seconds; `benchmarks/bench_sse.py`).

Hand-written rather than httpx-sse: the adapters decode recorded bodies
(cassettes) as well as live `httpx` streams, and httpx-sse decodes only an
`httpx` response's lines (`iter_lines`), with no byte order mark handling.
"""

from __future__ import annotations

from attrs import frozen

_MAX_RETRY_DIGITS = 18  # larger values are ignored rather than parsed


@frozen
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    __slots__ = ("_data", "_event", "_id", "_pending", "_pending_cr", "_started", "retry")

    def __init__(self) -> None:
        self._pending: list[str] = []  # the start of a line whose end has not arrived
        self._pending_cr = False
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: str) -> list[SSEEvent]:
        if not chunk:
            return []
        if not self._started:
            self._started = True
            chunk = chunk.removeprefix("\ufeff")
        if self._pending_cr and chunk.startswith("\n"):
            # The "\r\n" pair was split across chunks; its "\r" already ended a line.
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith("\r")
        if "\r" in chunk:
            chunk = chunk.replace("\r\n", "\n").replace("\r", "\n")
        parts = chunk.split("\n")
        if len(parts) == 1:
            if chunk:
                self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(parts[0])
            parts[0] = "".join(self._pending)
        self._pending = [parts[-1]] if parts[-1] else []
        out: list[SSEEvent] = []
        for line in parts[:-1]:
            self._line(line, out)
        return out

    def flush(self) -> list[SSEEvent]:
        """End of input: an unterminated line or event is discarded."""
        self._pending, self._data, self._event = [], [], ""
        return []

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event or "message", self._id))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "retry" and _digits(value):
            self.retry = int(value)
        # other fields are ignored, as the standard says


def _digits(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS


def parse_sse(text: str) -> list[SSEEvent]:
    """Decode a whole recorded body."""
    decoder = SSEDecoder()
    return decoder.feed(text) + decoder.flush()
