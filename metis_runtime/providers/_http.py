"""POST a request and feed the SSE answer to a normalizer: the httpx path.

A request that failed transiently before the caller saw any event is sent
again under a `RetryPolicy` (see `_retry`); anything after the first yielded
event is final.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import TypedDict

import httpx

from .._errors import ProviderError
from .._errors import StreamFormatError
from ._base import WireNormalizer
from ._base import base_url_from
from ._base import error_text
from ._base import looks_like_overflow
from ._base import one_line
from ._errors import ContextOverflowError
from ._options import NO_OPTIONS
from ._options import WireOptions
from ._retry import NO_RETRY
from ._retry import RETRY_STATUSES
from ._retry import RetryPolicy
from ._retry import transient_stream_error
from ._sse import SSEDecoder
from ._sse import SSEEvent
from ._types import ModelRequest
from ._types import StreamEvent

# Connect quickly, but let a long generation stream for minutes between bytes.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)

# Transport failures that mean the request never reached a server that answered.
_RETRY_TRANSPORT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError)

_log = logging.getLogger(__name__)


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


class _Transient(Exception):
    """An attempt failed in a way worth another one; `error` is what to raise if none is left."""

    def __init__(self, error: ProviderError, headers: Mapping[str, str] | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.headers = headers


def _counted(error: ProviderError, attempts: int) -> ProviderError:
    """Name the number of attempts in the message, when there was more than one."""
    if attempts > 1 and error.args and isinstance(error.args[0], str):
        error.args = (f"{error.args[0]} (after {attempts} attempts)", *error.args[1:])
    return error


def _feed(
    normalizer: WireNormalizer, sse: SSEEvent, sent: bool, headers: Mapping[str, str]
) -> list[StreamEvent]:
    try:
        return normalizer.feed_sse(sse)
    except ProviderError as exc:
        if (
            not sent
            and not isinstance(exc, StreamFormatError | ContextOverflowError)
            and transient_stream_error(sse.data)
        ):
            raise _Transient(exc, headers) from None
        raise


async def _check_answer(provider: str, response: httpx.Response, url: str) -> None:
    if response.status_code >= 300:
        raw = (await response.aread()).decode("utf-8", errors="replace")
        error = status_error(provider, response.status_code, raw, url)
        if response.status_code in RETRY_STATUSES:
            raise _Transient(error, response.headers)
        raise error
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        # A JSON body on 2xx means the server ignored `stream: true`.
        raw = (await response.aread()).decode("utf-8", errors="replace")
        raise ProviderError(
            f"{provider}: expected an event stream from {url}, got JSON: {one_line(raw)}"
        )


async def stream_sse(
    *,
    provider: str,
    client: httpx.AsyncClient | None,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    normalizer: Callable[[], WireNormalizer],
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    retry: RetryPolicy = NO_RETRY,
) -> AsyncIterator[StreamEvent]:
    """Stream one answer; `normalizer` makes a fresh normalizer for each attempt."""
    own = client is None
    http = httpx.AsyncClient(timeout=timeout) if client is None else client
    attempt = 0
    try:
        while True:
            attempt += 1
            sent = False  # has the caller seen an event of this attempt?
            opened = False  # did a response (status and headers) arrive?
            try:
                async with http.stream("POST", url, json=body, headers=dict(headers)) as response:
                    opened = True
                    await _check_answer(provider, response, url)
                    norm = normalizer()
                    decoder = SSEDecoder()
                    # An event stream is UTF-8 whatever its charset says (the SSE standard).
                    text = codecs.getincrementaldecoder("utf-8")("replace")
                    async for raw in response.aiter_bytes():
                        for sse in decoder.feed(text.decode(raw)):
                            for event in _feed(norm, sse, sent, response.headers):
                                sent = True
                                yield event
                    for sse in decoder.feed(text.decode(b"", final=True)) + decoder.flush():
                        for event in _feed(norm, sse, sent, response.headers):
                            sent = True
                            yield event
                    for event in norm.finish():
                        yield event
                return
            except _Transient as exc:
                transient = exc
            except ProviderError as exc:
                _counted(exc, attempt)
                raise
            except (httpx.HTTPError, httpx.StreamError, httpx.InvalidURL) as exc:
                error = ProviderError(
                    f"{provider}: request to {url} failed: "
                    f"{type(exc).__name__}: {one_line(str(exc))}"
                )
                if opened or not isinstance(exc, _RETRY_TRANSPORT):
                    raise _counted(error, attempt) from exc
                error.__cause__ = exc
                transient = _Transient(error, None)
            error = transient.error
            if attempt > retry.max_retries:
                raise _counted(error, attempt) from error.__cause__
            wait = retry.delay(attempt - 1, transient.headers)
            _log.info(
                "%s; retrying in %.2f s (retry %d of %d)", error, wait, attempt, retry.max_retries
            )
            await retry.sleep(wait)
    finally:
        if own:
            await http.aclose()


class HTTPSettings(TypedDict, total=False):
    """The keyword arguments every `HTTPProvider` takes (a subclass may take more)."""

    api_key: str | None
    base_url: str | None
    http_client: httpx.AsyncClient | None
    timeout: httpx.Timeout
    retry: RetryPolicy | None
    options: WireOptions


class HTTPProvider:
    """What every provider over plain httpx shares: a model, a key (`api_key`,
    else the `key_variable` the vendor's SDK reads), an endpoint `path` under
    `base_url` (else `url_variable`, else `default_url`), and `stream_sse`;
    subclasses name those and the headers, body and normalizer."""

    name = ""
    path = ""
    key_variable = ""
    url_variable = ""
    default_url = ""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        options: WireOptions = NO_OPTIONS,
    ) -> None:
        self.model = model
        self.options = options
        self._api_key = api_key
        base = base_url_from(base_url, self.url_variable, self.default_url)
        self._url = base.rstrip("/") + self.path
        self._client = http_client
        self._timeout = timeout
        self.retry = RetryPolicy() if retry is None else retry

    def key(self) -> str:
        key = self._api_key or os.environ.get(self.key_variable)
        if not key:
            raise ProviderError(
                f"{self.name}: no API key (pass api_key= or set {self.key_variable})"
            )
        return key

    def headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def normalizer(self) -> WireNormalizer:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return stream_sse(
            provider=self.name,
            client=self._client,
            url=self._url,
            headers={**self.options.headers, **self.headers(self.key())},
            body=self.body(request),
            normalizer=self.normalizer,
            timeout=self._timeout,
            retry=self.retry,
        )
