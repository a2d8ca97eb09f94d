"""Replay recorded exchanges through the real wire adapters."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from collections.abc import Callable
from typing import Any

import httpx

from .._errors import ProviderError
from ._anthropic import AnthropicProvider
from ._cassette import Cassette
from ._cassette import Interaction
from ._cassette import WireFormat
from ._cassette import load_cassette
from ._openai_chat import OpenAIChatProvider
from ._openai_responses import OpenAIResponsesProvider
from ._retry import NO_RETRY
from ._types import ModelRequest
from ._types import StreamEvent

_WireProvider = AnthropicProvider | OpenAIChatProvider | OpenAIResponsesProvider
_PROVIDERS: dict[WireFormat, Callable[..., _WireProvider]] = {
    "anthropic": AnthropicProvider,
    "openai-chat": OpenAIChatProvider,
    "openai-responses": OpenAIResponsesProvider,
}


class ReplayProvider:
    """Serves a cassette's interactions in order, one per `stream` call.

    Each answer goes through the real provider for its wire format, over an
    `httpx.MockTransport` that streams the recorded body in chunks, so the
    HTTP, SSE and normalizer code is exactly the live code. What we posted is
    kept in `sent` (decoded JSON bodies) for inspection. Recorded requests are
    not compared with ours: the artifact is frozen, our prompts may evolve.
    Nothing is retried: a recorded error is the answer to that request.
    """

    name = "replay"

    def __init__(self, source: str | os.PathLike[str] | Cassette, *, chunk_size: int = 4096):
        self.cassette = source if isinstance(source, Cassette) else load_cassette(source)
        self.sent: list[dict[str, Any]] = []
        self._next = 0
        self._chunk_size = max(1, chunk_size)

    @property
    def remaining(self) -> int:
        return len(self.cassette.interactions) - self._next

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self._next >= len(self.cassette.interactions):
            raise ProviderError(
                f"{self.cassette.path}: replay exhausted: request {self._next + 1} asked, "
                f"but the cassette records {len(self.cassette.interactions)} interaction(s)"
            )
        interaction = self.cassette.interactions[self._next]
        self._next += 1
        return self._play(interaction, request)

    async def _play(
        self, interaction: Interaction, request: ModelRequest
    ) -> AsyncIterator[StreamEvent]:
        body = interaction.body.encode("utf-8")
        size = self._chunk_size

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), size):
                yield body[start : start + size]

        def answer(http_request: httpx.Request) -> httpx.Response:
            self.sent.append(json.loads(http_request.content))
            return httpx.Response(
                interaction.status,
                headers={"content-type": interaction.content_type},
                content=chunks(),
            )

        recorded = interaction.request_body or {}
        model = recorded.get("model")
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            provider = _PROVIDERS[interaction.wire](
                model if isinstance(model, str) else "replay",
                api_key="replay",
                base_url=interaction.base_url,
                http_client=client,
                retry=NO_RETRY,  # one recorded answer per request, failures included
            )
            async for event in provider.stream(request):
                yield event
