"""Who answers an `ask`: a person, a protocol client, or a fixed default.

An asker is an async callable `request -> bool` with a `resolver` name. A
failing asker is a denial, never an exception in the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import Protocol
from typing import TextIO

from attrs import frozen

from metis_trace import Decision
from metis_trace import Facts
from metis_trace import InputError
from metis_trace import RuleRef
from metis_trace import Stage
from metis_trace import decode_json

from .._input import decode_text

_YES = frozenset({"y", "yes"})
_MAX_ANSWER_CHARS = 4096  # a terminal answer is read up to here
_ANSWERS = "permission/ask answer"  # how a malformed JSON-RPC answer is named


@frozen
class AskRequest:
    """What an asker is shown: the call and the gate's decision about it."""

    occ: str
    tool: str
    input: Mapping[str, Any]
    decision: Decision
    stage: Stage
    rule: RuleRef | None
    facts: Facts
    detail: str = ""

    def summary(self) -> str:
        command = self.input.get("command")
        if isinstance(command, str):
            return f"{self.tool}: {command}"
        for key in ("file_path", "path", "url"):
            value = self.input.get(key)
            if isinstance(value, str):
                return f"{self.tool}: {value}"
        return self.tool

    def params(self) -> dict[str, Any]:
        """The JSON-RPC `permission/ask` params."""
        return {
            "occ": self.occ,
            "tool": self.tool,
            "input": dict(self.input),
            "stage": self.stage.value,
            "rule": self.rule.model_dump(mode="json") if self.rule is not None else None,
            "detail": self.detail,
        }


class Asker(Protocol):
    resolver: str

    async def __call__(self, request: AskRequest) -> bool: ...


class TerminalAsker:
    """Prompts a person: one question at a time, `y`/`yes` approves.

    Reads a line from `input` (stdin by default) without blocking the event
    loop; end of input or anything else denies.
    """

    resolver = "user"

    def __init__(self, input: TextIO | None = None, output: TextIO | None = None) -> None:
        self._input = input
        self._output = output
        self._lock = asyncio.Lock()

    async def __call__(self, request: AskRequest) -> bool:
        inp = self._input if self._input is not None else sys.stdin
        out = self._output if self._output is not None else sys.stderr
        why = request.stage.value
        if request.rule is not None:
            why += f": {request.rule.pattern} ({request.rule.source.value})"
        elif request.detail:
            why += f": {request.detail}"
        async with self._lock:
            out.write(f"Allow {request.summary()}? [{why}] [y/N] ")
            out.flush()
            line = await asyncio.to_thread(_answer_line, inp)
        return line.strip().lower() in _YES


def _answer_line(inp: TextIO) -> str:
    """One answer line, read in bounded pieces: an answer is a word, so a line
    longer than _MAX_ANSWER_CHARS is read to its end and counts as no (its
    rest must not answer the next ask)."""
    line = inp.readline(_MAX_ANSWER_CHARS)
    if len(line) < _MAX_ANSWER_CHARS or line.endswith("\n"):
        return line
    while (rest := inp.readline(_MAX_ANSWER_CHARS)) and not rest.endswith("\n"):
        pass
    return ""


class CallbackAsker:
    """Asks a protocol client through a plain callback (sync or async)."""

    resolver = "protocol"

    def __init__(self, callback: Callable[[AskRequest], bool | Awaitable[bool]]) -> None:
        self._callback = callback

    async def __call__(self, request: AskRequest) -> bool:
        result = self._callback(request)
        if inspect.isawaitable(result):
            result = await result
        return result is True


class JsonRpcAsker:
    """A minimal JSON-RPC 2.0 client over a pair of asyncio streams.

    Sends `{"jsonrpc": "2.0", "id": N, "method": "permission/ask", "params":
    {...}}` as one line of JSON and waits for the response with the same id;
    `{"result": {"approved": true}}` approves. An error response, a closed
    stream, a malformed answer or a timeout denies. Other lines (notifications,
    responses to other ids) are skipped. One request is in flight at a time.
    """

    resolver = "protocol"

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        timeout: float | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._timeout = timeout
        self._next_id = 0
        self._lock = asyncio.Lock()

    async def __call__(self, request: AskRequest) -> bool:
        async with self._lock:
            self._next_id += 1
            ident = self._next_id
            message = {
                "jsonrpc": "2.0",
                "id": ident,
                "method": "permission/ask",
                "params": request.params(),
            }
            try:
                self._writer.write(json.dumps(message, default=str).encode() + b"\n")
                await self._writer.drain()
                return await asyncio.wait_for(self._answer(ident), self._timeout)
            except (OSError, TimeoutError, ConnectionError):
                return False

    async def _answer(self, ident: int) -> bool:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # longer than the stream's limit: dropped, not an answer
                continue
            if not line:
                return False  # the client went away
            try:
                # Strict, as every reader (metis_runtime._input): UTF-8, no NaN,
                # bounded depth and integers, no repeated keys.
                response = decode_json(decode_text(line, _ANSWERS), source=_ANSWERS)
            except InputError:
                continue
            if not isinstance(response, dict) or response.get("id") != ident:
                continue
            result = response.get("result")
            return isinstance(result, dict) and result.get("approved") is True
