"""A local fake of the Anthropic Messages API for the real Claude Code CLI.

It serves scripted turns as the streaming wire format of
https://docs.anthropic.com/en/api/messages-streaming (`message_start`,
`content_block_start` / `_delta` / `_stop`, `message_delta`, `message_stop`),
the event sequence of the recorded exchanges in
`../shared/corpora/provider-streams/anthropic/` (e.g.
`test_anthropic_local_shell_toolset_stream.yaml`: a `tool_use` block whose
input arrives as `input_json_delta` fragments, `stop_reason: tool_use`).

The main conversation (a request that carries `tools`) gets the next scripted
turn, chosen by how many `tool_result` blocks its messages hold, so Claude
Code's retries and side requests never shift the script. Any other request
(a title or a quota check on a small model, `count_tokens`) is answered with
a minimal valid reply. Every request is kept in `requests` for the test.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any

__all__ = ["FakeAnthropic", "text_turn", "tool_turn"]

Turn = list[dict[str, Any]]  # the content blocks of one assistant message


def tool_turn(*calls: tuple[str, str, dict[str, Any]]) -> Turn:
    """One assistant message of tool calls: (id, name, input) each."""
    return [{"type": "tool_use", "id": i, "name": n, "input": inp} for i, n, inp in calls]


def text_turn(text: str) -> Turn:
    return [{"type": "text", "text": text}]


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _stream(turn: Turn, model: str, number: int) -> bytes:
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": 1}  # fmt: skip
    out = [_sse({"type": "message_start", "message": {
        "id": f"msg_fake{number:04d}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]  # fmt: skip
    for index, block in enumerate(turn):
        if block["type"] == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            out.append(
                _sse({"type": "content_block_start", "index": index, "content_block": start})
            )
            raw = json.dumps(block["input"])
            for cut in range(0, len(raw), 20):  # fragments, as the recorded streams arrive
                delta = {"type": "input_json_delta", "partial_json": raw[cut : cut + 20]}
                out.append(_sse({"type": "content_block_delta", "index": index, "delta": delta}))
        else:
            start = {"type": "text", "text": ""}
            out.append(
                _sse({"type": "content_block_start", "index": index, "content_block": start})
            )
            delta = {"type": "text_delta", "text": block["text"]}
            out.append(_sse({"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_sse({"type": "content_block_stop", "index": index}))
    stop = "tool_use" if any(b["type"] == "tool_use" for b in turn) else "end_turn"
    out.append(_sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                     "usage": {"output_tokens": 5}}))  # fmt: skip
    out.append(_sse({"type": "message_stop"}))
    return b"".join(out)


def _results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(
                1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return count


class FakeAnthropic:
    """Serve `script` (one turn per step; the step is the number of tool
    results so far, counted in calls per turn) on 127.0.0.1."""

    def __init__(self, script: Sequence[Turn]) -> None:
        self.script = list(script)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._record(self.path, {})
                self._json(200, {"data": [], "has_more": False})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                fake._record(self.path, body)
                if self.path.split("?")[0].endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 10})
                    return
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                "message": self.path}})  # fmt: skip
                    return
                turn = fake._turn(body)
                model = str(body.get("model", "claude-fake"))
                if body.get("stream"):
                    payload = _stream(turn, model, len(fake.requests))
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                stop = "tool_use" if any(b["type"] == "tool_use" for b in turn) else "end_turn"
                self._json(200, {"id": "msg_fake", "type": "message", "role": "assistant",
                                 "model": model, "content": turn, "stop_reason": stop,
                                 "stop_sequence": None,
                                 "usage": {"input_tokens": 10, "output_tokens": 5}})  # fmt: skip

            def _json(self, status: int, data: Any) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def _turn(self, body: dict[str, Any]) -> Turn:
        if not body.get("tools"):  # a side request (a title, a topic check): plain text
            return text_turn("ok")
        done, step = _results(body), 0
        while step < len(self.script) and done > 0:
            done -= sum(1 for b in self.script[step] if b["type"] == "tool_use")
            step += 1
        return self.script[step] if step < len(self.script) else text_turn("Done.")

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
