"""The block builder shared by the three wire normalizers.

Every normalizer translates its wire events into calls on one `MessageBuilder`,
so the repairs (missing ids, repeated ids, arguments that are not a JSON
object, blocks left open) are decided in one place and read the same for every
provider. The builder never raises: a normalizer raises `StreamFormatError`
for what cannot be repaired, the builder only records repairs.
"""

from __future__ import annotations

import copy
from typing import Any
from typing import Literal

from metis_trace import InputError
from metis_trace import decode_json

from ._types import AssistantBlock
from ._types import AssistantMessage
from ._types import BlockFinished
from ._types import BlockKind
from ._types import BlockStarted
from ._types import MessageComplete
from ._types import RedactedThinkingBlock
from ._types import ServerToolBlock
from ._types import StreamEvent
from ._types import StreamRepaired
from ._types import StreamRepairNote
from ._types import TextBlock
from ._types import TextDelta
from ._types import ThinkingBlock
from ._types import ThinkingDelta
from ._types import ToolArgsDelta
from ._types import ToolUseBlock
from ._types import Usage

_EMPTY_INPUT: dict[str, Any] = {}


class Slot:
    """A block being streamed. `index` stays None until the block is visible."""

    __slots__ = (
        "index",
        "initial_input",
        "kind",
        "name",
        "open",
        "parts",
        "raw",
        "signature",
        "tool_id",
        "wire",
    )

    def __init__(self, kind: BlockKind) -> None:
        self.kind: BlockKind = kind
        self.index: int | None = None
        self.parts: list[str] = []
        self.signature: list[str] = []
        self.tool_id = ""
        self.name = ""
        self.initial_input: dict[str, Any] | None = None
        self.raw: dict[str, Any] | None = None  # opaque blocks: what the wire sent at start
        self.wire: dict[str, Any] | None = None  # a client call's own wire item (ToolUseBlock.wire)
        self.open = True


class MessageBuilder:
    __slots__ = ("_blocks", "_ids", "_open", "events", "message_id", "provider", "repairs")

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.message_id = ""
        self.events: list[StreamEvent] = []
        self.repairs: list[StreamRepairNote] = []
        self._blocks: list[AssistantBlock | None] = []
        self._open: list[Slot] = []
        self._ids: dict[str, int] = {}

    # --- bookkeeping -------------------------------------------------------------

    def drain(self) -> list[StreamEvent]:
        out, self.events = self.events, []
        return out

    def note(self, problem: str, repair: str) -> None:
        note = StreamRepairNote(problem, repair)
        self.repairs.append(note)
        self.events.append(StreamRepaired(note))

    def take_id(self, value: Any, problem: str, repair: str) -> None:
        """The message id the wire sent, or "unknown" (noted) when it sent none."""
        if isinstance(value, str) and value:
            self.message_id = value
        else:
            self.message_id = "unknown"
            self.note(problem, repair)

    @property
    def open_slots(self) -> tuple[Slot, ...]:
        return tuple(self._open)

    @property
    def has_tool_use(self) -> bool:
        return any(isinstance(b, ToolUseBlock) for b in self._blocks) or any(
            s.kind == "tool_use" for s in self._open
        )

    def _show(self, slot: Slot) -> int:
        index = len(self._blocks)
        slot.index = index
        self._blocks.append(None)
        self.events.append(BlockStarted(index, slot.kind, slot.tool_id, slot.name))
        return index

    # --- starting blocks -----------------------------------------------------------

    def start_text(self) -> Slot:
        """Text shows on its first non-empty delta: empty text blocks are dropped
        (providers send them around server tools, and reject them on input)."""
        slot = Slot("text")
        self._open.append(slot)
        return slot

    def start_thinking(self, *, lazy: bool = False) -> Slot:
        slot = Slot("thinking")
        self._open.append(slot)
        if not lazy:
            self._show(slot)
        return slot

    def start_tool(
        self,
        tool_id: str | None,
        name: str,
        initial_input: dict[str, Any] | None = None,
        wire: dict[str, Any] | None = None,
    ) -> Slot:
        slot = Slot("tool_use")
        slot.name = name
        slot.initial_input = initial_input
        slot.wire = wire
        index = len(self._blocks)
        if not tool_id:
            tool_id = f"missing-{self.message_id or 'unknown'}-{index}"
            self.note(
                f"tool_use {name!r} at block {index} has no id",
                f"synthesized the deterministic id {tool_id!r}",
            )
        elif tool_id in self._ids:
            # Not ours to dedupe: the runtime closes each occurrence on its own.
            self.note(
                f"tool_use id {tool_id!r} repeated within message "
                f"(blocks {self._ids[tool_id]} and {index})",
                "kept both occurrences; each is closed separately",
            )
        self._ids.setdefault(tool_id, index)
        slot.tool_id = tool_id
        self._open.append(slot)
        self._show(slot)
        return slot

    def start_opaque(
        self, kind: Literal["redacted_thinking", "server_tool"], raw: dict[str, Any]
    ) -> Slot:
        """A block kept as the provider sent it, to be sent back unchanged:
        `redacted_thinking` (raw is `{"data": ...}`) or a server tool's block
        (raw is the whole wire block; its input deltas are joined at finish)."""
        slot = Slot(kind)
        slot.raw = copy.deepcopy(raw)
        self._open.append(slot)
        self._show(slot)
        return slot

    # --- content -------------------------------------------------------------------

    def delta(self, slot: Slot, text: str) -> None:
        if not text:
            return
        index = slot.index
        if index is None:
            index = self._show(slot)
        slot.parts.append(text)
        if slot.kind == "text":
            self.events.append(TextDelta(index, text))
        elif slot.kind == "thinking":
            self.events.append(ThinkingDelta(index, text))
        elif slot.kind == "tool_use":
            self.events.append(ToolArgsDelta(index, text))
        # A server tool's input is joined silently: it is no call of ours.

    def add_signature(self, slot: Slot, signature: str) -> None:
        slot.signature.append(signature)

    # --- finishing -----------------------------------------------------------------

    def finish(
        self,
        slot: Slot,
        *,
        final_arguments: str | None = None,
        signature: str | None = None,
    ) -> None:
        if not slot.open:
            return
        slot.open = False
        self._open.remove(slot)
        if signature is not None:
            slot.signature = [signature]
        if slot.kind == "thinking" and slot.index is None and slot.signature:
            self._show(slot)  # a signed but empty thinking block must be sent back
        index = slot.index
        if index is None:
            return  # nothing was ever shown: an empty text or thinking block
        block: AssistantBlock
        if slot.kind == "text":
            block = TextBlock("".join(slot.parts))
        elif slot.kind == "thinking":
            block = ThinkingBlock("".join(slot.parts), "".join(slot.signature))
        elif slot.kind == "redacted_thinking":
            data = slot.raw.get("data") if slot.raw else None
            block = RedactedThinkingBlock(data if isinstance(data, str) else "")
        elif slot.kind == "server_tool":
            block = self._server_block(slot, index)
        else:
            block = self._tool_block(slot, index, final_arguments)
        self._blocks[index] = block
        self.events.append(BlockFinished(index, block))

    def _server_block(self, slot: Slot, index: int) -> ServerToolBlock:
        raw = slot.raw if slot.raw is not None else {}
        streamed = "".join(slot.parts)
        if streamed.strip():
            try:
                value = decode_json(streamed)
            except InputError:
                value = None
            if isinstance(value, dict):
                raw["input"] = value
            else:
                self.note(
                    f"block {index} ({raw.get('type')}): streamed input is not a JSON object",
                    "kept the input of its start event",
                )
        return ServerToolBlock(raw)

    def _tool_block(self, slot: Slot, index: int, final_arguments: str | None) -> ToolUseBlock:
        streamed = "".join(slot.parts)
        raw = streamed
        if final_arguments is not None:
            if slot.parts and final_arguments != streamed:
                self.note(
                    f"tool_use {slot.tool_id!r} at block {index}: streamed arguments differ "
                    "from the final arguments",
                    "used the final arguments",
                )
            raw = final_arguments
        if not raw.strip():
            # No argument deltas: the start event's input (Anthropic) or an empty object.
            return ToolUseBlock(
                slot.tool_id, slot.name, dict(slot.initial_input or _EMPTY_INPUT), wire=slot.wire
            )
        error: str | None = None
        try:  # strict JSON: a NaN argument would reach the trace, which refuses it
            value = decode_json(raw)
        except InputError as exc:
            error = f"arguments are {_not_json(exc.message)}"
        else:
            if isinstance(value, dict):
                return ToolUseBlock(slot.tool_id, slot.name, value)
            error = f"arguments are JSON {type(value).__name__}, not an object"
        # The call keeps its place (it must still be closed with a result), but it
        # runs nothing: `input_error` tells the loop to answer it with an error.
        self.note(
            f"tool_use {slot.name!r} (id {slot.tool_id!r}, block {index}): {error}",
            "input set to {}; the call gets an error result instead of running",
        )
        return ToolUseBlock(slot.tool_id, slot.name, {}, error)

    def finish_open(self, problem: str) -> None:
        """Close blocks the wire never closed, with one note each."""
        for slot in tuple(self._open):
            if slot.index is not None:
                self.note(f"block {slot.index} ({slot.kind}) {problem}", "closed it there")
            self.finish(slot)

    def complete(self, stop_reason: str, usage: Usage | None) -> AssistantMessage:
        self.finish_open("was never closed before the message ended")
        blocks = tuple(b for b in self._blocks if b is not None)
        message = AssistantMessage(self.message_id, blocks, stop_reason, usage, tuple(self.repairs))
        self.events.append(MessageComplete(message))
        return message


def _not_json(message: str) -> str:
    """`InputError.message` as the end of "arguments are ..."."""
    return message if message.startswith("not valid JSON") else f"not strict JSON ({message})"
