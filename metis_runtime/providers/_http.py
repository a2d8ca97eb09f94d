"""POST a request and feed the SSE answer to a normalizer: the httpx path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from .._errors import ProviderError
from ._base import WireNormalizer, error_text, looks_like_overflow, one_line
from ._errors import ContextOverflowError
from ._sse import SSEDecoder
from ._types import StreamEvent

# Connect quickly, but let a long generation stream for minutes between bytes.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


def status_error(provider: str, status: int, body: str, url: str) -> ProviderError:
    """The typed error for a non-2xx answer; overflow gets its own type."""
    try:
        detail = error_text(json.loads(body))
    except ValueError:
        detail = body
    detail = one_line(detail) or "(empty body)"
    message = f"{provider}: HTTP {status} from {url}: {detail}"
    if status == 413 or (status == 400 and looks_like_overflow(detail)):
        return ContextOverflowError(message)
    return ProviderError(message)


async def stream_sse(
    *,
    provider: str,
    client: httpx.AsyncClient | None,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    normalizer: WireNormalizer,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
) -> AsyncIterator[StreamEvent]:
    own = client is None
    http = httpx.AsyncClient(timeout=timeout) if client is None else client
    try:
        async with http.stream("POST", url, json=body, headers=dict(headers)) as response:
            if response.status_code >= 300:
                raw = (await response.aread()).decode("utf-8", errors="replace")
                raise status_error(provider, response.status_code, raw, url)
            content_type = response.headers.get("content-type", "")
            if content_type.startswith("application/json"):
                # A JSON body on 2xx means the server ignored `stream: true`.
                raw = (await response.aread()).decode("utf-8", errors="replace")
                raise ProviderError(
                    f"{provider}: expected an event stream from {url}, got JSON: {one_line(raw)}"
                )
            decoder = SSEDecoder()
            async for chunk in response.aiter_text():
                for sse in decoder.feed(chunk):
                    for event in normalizer.feed_sse(sse):
                        yield event
            for sse in decoder.flush():
                for event in normalizer.feed_sse(sse):
                    yield event
            for event in normalizer.finish():
                yield event
    except (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL) as exc:
        raise ProviderError(
            f"{provider}: request to {url} failed: {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    finally:
        if own:
            await http.aclose()
