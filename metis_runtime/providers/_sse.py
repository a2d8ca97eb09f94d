"""A small incremental server-sent-events decoder (WHATWG `text/event-stream`).

Fed text in arbitrary chunks; yields one `SSEEvent` per blank-line-terminated
event. An event still unterminated at end of input is dropped, as the standard
says: a cut stream must look cut to the adapters, never half-parsed.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    __slots__ = ("_buf", "_data", "_event", "_id", "_pending_cr")

    def __init__(self) -> None:
        self._buf = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._pending_cr = False

    def feed(self, chunk: str) -> list[SSEEvent]:
        if not chunk:
            return []
        if self._pending_cr and chunk.startswith("\n"):
            # The "\r\n" pair was split across chunks; its "\r" already ended a line.
            chunk = chunk[1:]
        self._pending_cr = chunk.endswith("\r")
        text = self._buf + chunk
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        self._buf = lines.pop()
        out: list[SSEEvent] = []
        for line in lines:
            self._line(line, out)
        return out

    def flush(self) -> list[SSEEvent]:
        """End of input: a final line without newline still counts, an open event does not."""
        out: list[SSEEvent] = []
        if self._buf:
            self._line(self._buf, out)
            self._buf = ""
        self._data, self._event, self._id = [], "", None
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            data = "\n".join(self._data)
            if data:
                out.append(SSEEvent(data, self._event or "message", self._id))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        # "retry" and unknown fields are ignored, as the standard says.


def parse_sse(text: str) -> list[SSEEvent]:
    """Decode a whole recorded body."""
    decoder = SSEDecoder()
    return decoder.feed(text) + decoder.flush()
