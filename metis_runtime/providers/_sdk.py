"""Providers backed by the official `anthropic` / `openai` SDKs (optional extras).

They send the same request bodies as the httpx providers and feed the SDK's raw
stream events (as `to_dict()`) to the same normalizers, so both paths produce
identical stream events. The SDK is imported when a provider is built; a
missing SDK is a `ProviderError` that says which extra to install.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import AsyncIterator
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any
from typing import TypedDict
from typing import Unpack

import httpx

from .._errors import ProviderError
from .._errors import StreamFormatError
from ._anthropic import AnthropicNormalizer
from ._anthropic import anthropic_request_body
from ._base import WireNormalizer
from ._base import error_text
from ._base import looks_like_overflow
from ._base import one_line
from ._errors import ContextOverflowError
from ._openai_chat import OpenAIChatNormalizer
from ._openai_chat import openai_chat_request_body
from ._openai_responses import OpenAIResponsesNormalizer
from ._openai_responses import openai_responses_request_body
from ._types import ModelRequest
from ._types import StreamEvent


def import_sdk(package: str) -> ModuleType:
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise ProviderError(
            f"the {package!r} SDK is not installed: pip install 'metis[{package}]' "
            "(or use the httpx provider, which needs no SDK)"
        ) from exc


@cache
def _transport_errors() -> tuple[type[BaseException], ...]:
    """httpx errors the SDKs may let escape mid-stream; newer SDKs use the httpx2 fork."""
    errors: list[type[BaseException]] = [httpx.HTTPError, httpx.StreamError]
    try:
        fork = importlib.import_module("httpx2")
    except ImportError:
        return tuple(errors)
    for name in ("HTTPError", "StreamError"):
        cls = getattr(fork, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            errors.append(cls)
    return tuple(errors)


def _event_dict(raw: Any) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    # warnings=False: the SDK models unknown block types loosely and would warn on dump.
    data = raw.to_dict(warnings=False)
    if not isinstance(data, Mapping):
        raise ProviderError(f"SDK stream produced a {type(raw).__name__}, not an event object")
    return data


def _sdk_error(provider: str, sdk: ModuleType, exc: Exception) -> ProviderError:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    text = one_line(error_text(body) if isinstance(body, Mapping) else str(exc))
    if status == 200:
        where = "error inside the stream"
    else:
        where = f"HTTP {status}" if isinstance(status, int) else type(exc).__name__
    message = f"{provider} (SDK): {where}: {text}"
    # In-stream errors come as status errors carrying the stream's 200.
    overflow = status == 413 or (status in (None, 200, 400) and looks_like_overflow(text))
    return (ContextOverflowError if overflow else ProviderError)(message)


def _base_error(sdk: ModuleType) -> type[Exception]:
    """The root of an SDK's own errors (`anthropic.AnthropicError`, `openai.OpenAIError`)."""
    for name in ("AnthropicError", "OpenAIError"):
        cls = getattr(sdk, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls
    api_error: type[Exception] = sdk.APIError
    return api_error


async def drive_sdk_stream(
    provider: str,
    sdk: ModuleType,
    open_stream: Callable[[], Awaitable[Any]],
    normalizer: WireNormalizer,
) -> AsyncIterator[StreamEvent]:
    """Open an SDK stream and feed its raw events to `normalizer`."""
    api_error: type[Exception] = sdk.APIError
    base_error = _base_error(sdk)
    try:
        try:
            stream = await open_stream()
        except TypeError as exc:
            # What the anthropic SDK raises when no credentials can be found.
            raise ProviderError(f"{provider} (SDK): cannot send the request: {exc}") from exc
        try:
            async for raw in stream:
                for event in normalizer.feed(_event_dict(raw)):
                    yield event
        finally:
            # Release the connection even when the consumer stops early.
            close = getattr(stream, "close", None)
            if close is not None:
                await close()
    except api_error as exc:
        raise _sdk_error(provider, sdk, exc) from exc
    except base_error as exc:
        raise ProviderError(
            f"{provider} (SDK): {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    except json.JSONDecodeError as exc:
        raise StreamFormatError(
            f"{provider} stream event {normalizer.events_seen}: data is not valid JSON "
            f"({exc.msg} at char {exc.pos})"
        ) from exc
    except _transport_errors() as exc:
        raise ProviderError(
            f"{provider} (SDK): connection failed: {type(exc).__name__}: {one_line(str(exc))}"
        ) from exc
    for event in normalizer.finish():
        yield event


def make_client(sdk: ModuleType, factory: str, provider: str, kwargs: dict[str, Any]) -> Any:
    try:
        return getattr(sdk, factory)(**kwargs)
    except (_base_error(sdk), TypeError, ValueError) as exc:
        raise ProviderError(
            f"{provider} (SDK): cannot create the client: {one_line(str(exc))}"
        ) from exc


def _client_kwargs(
    api_key: str | None, base_url: str | None, http_client: Any, max_retries: int
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_retries": max_retries}
    if api_key is not None:
        kwargs["api_key"] = api_key
    if base_url is not None:
        kwargs["base_url"] = base_url
    if http_client is not None:
        kwargs["http_client"] = http_client
    return kwargs


class SDKSettings(TypedDict, total=False):
    """The keyword arguments every SDK provider takes (a subclass may take more)."""

    client: Any
    api_key: str | None
    base_url: str | None
    http_client: Any
    max_retries: int


class _SDKProvider:
    """What every SDK provider shares: the SDK `package`, a client made by its
    `factory` (unless one is given), and `drive_sdk_stream` over the body of
    the httpx provider, sent with `stream=True`; subclasses name the body, the
    SDK call and the normalizer."""

    name = ""
    package = ""
    factory = ""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        max_retries: int = 2,
    ) -> None:
        self.model = model
        self._sdk = import_sdk(self.package)
        self._client = client or make_client(
            self._sdk,
            self.factory,
            self.name,
            _client_kwargs(api_key, base_url, http_client, max_retries),
        )

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def create(self, body: dict[str, Any]) -> Any:
        """The SDK's streaming call with `body` (an awaitable of the stream)."""
        raise NotImplementedError

    def normalizer(self) -> WireNormalizer:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        body = self.body(request)
        body.pop("stream", None)  # passed as `stream=True` so the SDK picks its stream type
        return drive_sdk_stream(self.name, self._sdk, lambda: self.create(body), self.normalizer())


class AnthropicSDKProvider(_SDKProvider):
    """The Messages API through `anthropic.AsyncAnthropic(...).messages.create(stream=True)`.

    `http_client` must be the SDK's own client type (`anthropic.DefaultAsyncHttpxClient`
    or the httpx flavour that SDK version is built on).
    """

    name = "anthropic"
    package = "anthropic"
    factory = "AsyncAnthropic"

    def __init__(
        self, model: str, *, thinking_budget: int | None = None, **settings: Unpack[SDKSettings]
    ) -> None:
        super().__init__(model, **settings)
        self._thinking_budget = thinking_budget

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return anthropic_request_body(request, self.model, thinking_budget=self._thinking_budget)

    def create(self, body: dict[str, Any]) -> Any:
        return self._client.messages.create(**body, stream=True)

    def normalizer(self) -> WireNormalizer:
        return AnthropicNormalizer()


class _OpenAISDKProvider(_SDKProvider):
    """What both OpenAI SDK providers share: one `openai.AsyncOpenAI` client."""

    name = "openai"
    package = "openai"
    factory = "AsyncOpenAI"


class OpenAIChatSDKProvider(_OpenAISDKProvider):
    """Chat Completions through `openai.AsyncOpenAI(...).chat.completions.create(stream=True)`."""

    name = "openai-chat"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return openai_chat_request_body(request, self.model)

    def create(self, body: dict[str, Any]) -> Any:
        return self._client.chat.completions.create(**body, stream=True)

    def normalizer(self) -> WireNormalizer:
        return OpenAIChatNormalizer()


class OpenAIResponsesSDKProvider(_OpenAISDKProvider):
    """The Responses API through `openai.AsyncOpenAI(...).responses.create(stream=True)`."""

    name = "openai-responses"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        return openai_responses_request_body(request, self.model)

    def create(self, body: dict[str, Any]) -> Any:
        return self._client.responses.create(**body, stream=True)

    def normalizer(self) -> WireNormalizer:
        return OpenAIResponsesNormalizer()
