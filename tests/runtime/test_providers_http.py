"""The httpx providers and the SDK-backed providers, over recorded bodies.

No network: every answer is a recorded SSE body served by a MockTransport
(httpx for our providers, the SDK's own httpx flavour for the SDKs).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx
import pytest

from metis_runtime._errors import ProviderError
from metis_runtime._errors import StreamFormatError
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import AnthropicSDKProvider
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import OpenAIChatNormalizer
from metis_runtime.providers import OpenAIChatProvider
from metis_runtime.providers import OpenAIChatSDKProvider
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import OpenAIResponsesProvider
from metis_runtime.providers import OpenAIResponsesSDKProvider
from metis_runtime.providers import RetryPolicy
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolSpec
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import WireNormalizer
from metis_runtime.providers import complete
from tests.runtime.test_providers_support import ANTHROPIC_MCP
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import ANTHROPIC_WEB
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import RESPONSES_PHASE
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import drain
from tests.runtime.test_providers_support import drain_into
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import run

REQUEST = ModelRequest(
    system="Be brief.",
    messages=(
        Message.user("What is 2 + 2?"),
        Message("assistant", (ToolUseBlock("t1", "bash", {"command": "echo 4"}),)),
        Message("user", (ToolResultBlock("t1", "4"),)),
    ),
    tools=(ToolSpec("bash", "Run a command", {"type": "object"}),),
    max_tokens=256,
)

CASES: list[tuple[str, int, Any, Any, type[WireNormalizer], str]] = [
    (ANTHROPIC_TOOL, 0, AnthropicProvider, AnthropicSDKProvider, AnthropicNormalizer, "/v1/messages"),
    (ANTHROPIC_TOOL, 1, AnthropicProvider, AnthropicSDKProvider, AnthropicNormalizer, "/v1/messages"),
    (ANTHROPIC_MCP, 0, AnthropicProvider, AnthropicSDKProvider, AnthropicNormalizer, "/v1/messages"),
    (ANTHROPIC_WEB, 0, AnthropicProvider, AnthropicSDKProvider, AnthropicNormalizer, "/v1/messages"),
    (CHAT, 0, OpenAIChatProvider, OpenAIChatSDKProvider, OpenAIChatNormalizer, "/v1/chat/completions"),
    (CHAT, 1, OpenAIChatProvider, OpenAIChatSDKProvider, OpenAIChatNormalizer, "/v1/chat/completions"),
    (RESPONSES, 0, OpenAIResponsesProvider, OpenAIResponsesSDKProvider, OpenAIResponsesNormalizer, "/v1/responses"),
    (RESPONSES_PHASE, 0, OpenAIResponsesProvider, OpenAIResponsesSDKProvider, OpenAIResponsesNormalizer, "/v1/responses"),
]  # fmt: skip
IDS = [f"{c[0].split('/')[-1][5:-5]}[{c[1]}]" for c in CASES]
NO_RETRY = RetryPolicy(max_retries=0)  # these tests are about one attempt's errors


class Served:
    """A MockTransport handler that serves one body and keeps what was posted."""

    def __init__(
        self, body: str, status: int = 200, chunk: int = 0, content_type: str = "text/event-stream"
    ) -> None:
        self.body = body.encode("utf-8")
        self.status = status
        self.chunk = chunk
        self.headers = {"content-type": content_type}
        self.requests: list[Any] = []

    async def _chunks(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), self.chunk):
            yield self.body[start : start + self.chunk]

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        module = sys.modules[type(request).__module__.split(".")[0]]  # httpx or the SDK's fork
        content: Any = self._chunks() if self.chunk else self.body
        return module.Response(self.status, headers=self.headers, content=content)

    @property
    def posted(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.requests[-1].content)
        return data


def client(served: Served) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(served))


def sdk_http() -> ModuleType:
    """The httpx flavour the installed SDKs are built on (httpx, or its fork httpx2)."""
    anthropic = pytest.importorskip("anthropic")
    for base in anthropic.DefaultAsyncHttpxClient.__mro__:
        if base.__name__ == "AsyncClient":
            return sys.modules[base.__module__.split(".")[0]]
    raise AssertionError("no AsyncClient base")


def sdk_client(served: Served) -> Any:
    module = sdk_http()
    return module.AsyncClient(transport=module.MockTransport(served))


# --- the httpx path ----------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "n", "http_cls", "_sdk", "norm", "path"), CASES, ids=IDS)
def test_httpx_provider_streams_recorded_body(
    rel: str, n: int, http_cls: Any, _sdk: Any, norm: type[WireNormalizer], path: str
) -> None:
    served = Served(body(rel, n), chunk=7)  # tiny chunks: lines and UTF-8 split anywhere
    provider = http_cls("model-x", api_key="sk-test", http_client=client(served))
    events = run(drain(provider.stream(REQUEST)))
    check_stream(events)
    assert events == normalize(norm(), body(rel, n))
    (request,) = served.requests
    assert request.method == "POST" and request.url.path == path
    assert served.posted["model"] == "model-x" and served.posted["stream"] is True


def test_anthropic_request_headers_and_body() -> None:
    served = Served(body(ANTHROPIC_TOOL))
    message = run(
        complete(AnthropicProvider("claude-x", api_key="k1", http_client=client(served)), REQUEST)
    )
    assert message.stop_reason == "tool_use"
    request = served.requests[0]
    assert request.headers["x-api-key"] == "k1"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert served.posted["system"] == "Be brief." and served.posted["max_tokens"] == 256
    assert served.posted["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "4"}],
    }


def test_openai_request_headers_and_base_url() -> None:
    served = Served(body(CHAT))
    provider = OpenAIChatProvider(
        "gpt-x", api_key="k2", base_url="http://localhost:8000/v1/", http_client=client(served)
    )
    run(complete(provider, REQUEST))
    request = served.requests[0]
    assert str(request.url) == "http://localhost:8000/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k2"
    assert served.posted["messages"][0] == {"role": "system", "content": "Be brief."}


@pytest.mark.parametrize(
    ("status", "payload", "error"),
    [
        (
            400,
            {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "prompt is too long: 205351 tokens > 200000 maximum"}},
            ContextOverflowError,
        ),
        (
            400,
            {"error": {"message": "This model's maximum context length is 8192 tokens.",
                       "type": "invalid_request_error", "code": "context_length_exceeded"}},
            ContextOverflowError,
        ),
        (413, {"type": "error", "error": {"type": "request_too_large", "message": "Too big"}},
         ContextOverflowError),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool"}},
         ProviderError),
        (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
         ProviderError),
    ],
)  # fmt: skip
def test_http_errors_are_typed(status: int, payload: Any, error: type[Exception]) -> None:
    served = Served(json.dumps(payload), status=status, content_type="application/json")
    provider = AnthropicProvider("m", api_key="k", http_client=client(served), retry=NO_RETRY)
    with pytest.raises(ProviderError) as info:
        run(complete(provider, REQUEST))
    assert type(info.value) is error
    text = str(info.value)
    assert text.startswith(f"anthropic: HTTP {status} from https://api.anthropic.com/v1/messages: ")
    assert "\n" not in text


def test_non_json_error_body_is_kept_short_and_on_one_line() -> None:
    served = Served("<html>\n" + "upstream down " * 100 + "\n</html>", status=502)
    provider = OpenAIResponsesProvider("m", api_key="k", http_client=client(served), retry=NO_RETRY)
    with pytest.raises(ProviderError, match=r"^openai-responses: HTTP 502 from .*<html> upstream"):
        run(complete(provider, REQUEST))


def test_transport_errors_are_mapped_with_cause() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    provider = AnthropicProvider(
        "m",
        api_key="k",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)),
        retry=NO_RETRY,
    )
    with pytest.raises(ProviderError, match=r"request to .* failed: ConnectError") as info:
        run(complete(provider, REQUEST))
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_connection_lost_mid_stream_is_a_provider_error() -> None:
    recorded = body(ANTHROPIC_TOOL).encode()

    async def broken() -> AsyncIterator[bytes]:
        yield recorded[:300]
        raise httpx.ReadError("connection reset")

    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=broken())

    provider = AnthropicProvider(
        "m", api_key="k", http_client=httpx.AsyncClient(transport=httpx.MockTransport(serve))
    )
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError, match="ReadError"):
        run(drain_into(seen, provider.stream(REQUEST)))


def test_json_answer_instead_of_a_stream_is_refused() -> None:
    served = Served('{"id": "msg_1", "content": []}', content_type="application/json")
    provider = AnthropicProvider("m", api_key="k", http_client=client(served))
    with pytest.raises(ProviderError, match="expected an event stream"):
        run(complete(provider, REQUEST))


def test_empty_body_is_a_truncated_stream() -> None:
    provider = OpenAIChatProvider("m", api_key="k", http_client=client(Served("")))
    with pytest.raises(StreamFormatError, match="truncated after 0 events"):
        run(complete(provider, REQUEST))


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match=r"no API key .*ANTHROPIC_API_KEY"):
        run(complete(AnthropicProvider("m"), REQUEST))
    with pytest.raises(ProviderError, match=r"no API key .*OPENAI_API_KEY"):
        run(complete(OpenAIResponsesProvider("m"), REQUEST))


# --- the SDK path ------------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "n", "http_cls", "sdk_cls", "_norm", "path"), CASES, ids=IDS)
def test_sdk_provider_gives_the_same_events_as_httpx(
    rel: str, n: int, http_cls: Any, sdk_cls: Any, _norm: Any, path: str
) -> None:
    via_httpx = run(
        drain(http_cls("m", api_key="k", http_client=client(Served(body(rel, n)))).stream(REQUEST))
    )
    served = Served(body(rel, n), chunk=11)
    provider = sdk_cls("m", api_key="k", http_client=sdk_client(served), max_retries=0)
    via_sdk = run(drain(provider.stream(REQUEST)))
    assert via_sdk == via_httpx
    assert served.requests[0].url.path == path
    # The SDK posts our very body.
    assert served.posted["messages" if "messages" in served.posted else "input"]


def sdk_providers() -> list[Callable[..., Any]]:
    return [AnthropicSDKProvider, OpenAIChatSDKProvider, OpenAIResponsesSDKProvider]


@pytest.mark.parametrize("sdk_cls", sdk_providers())
def test_sdk_overflow_and_other_status_errors(sdk_cls: Any) -> None:
    overflow = {"error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}}
    served = Served(json.dumps(overflow), status=400, content_type="application/json")
    provider = sdk_cls("m", api_key="k", http_client=sdk_client(served), max_retries=0)
    with pytest.raises(ContextOverflowError, match=r"\(SDK\): HTTP 400: invalid_request_error"):
        run(complete(provider, REQUEST))
    served = Served(json.dumps({"error": {"message": "nope"}}), status=403)
    provider = sdk_cls("m", api_key="k", http_client=sdk_client(served), max_retries=0)
    with pytest.raises(ProviderError, match=r"HTTP 403: nope") as info:
        run(complete(provider, REQUEST))
    assert not isinstance(info.value, ContextOverflowError)


def test_sdk_error_event_inside_the_stream() -> None:
    stream = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m1"}}\n\n'
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        '"message":"Overloaded"}}\n\n'
    )
    provider = AnthropicSDKProvider(
        "m", api_key="k", http_client=sdk_client(Served(stream)), max_retries=0
    )
    with pytest.raises(
        ProviderError, match="error inside the stream: overloaded_error: Overloaded"
    ):
        run(complete(provider, REQUEST))


def test_sdk_truncated_stream_is_the_same_typed_error() -> None:
    cut = body(ANTHROPIC_TOOL).split("event: message_delta")[0]
    provider = AnthropicSDKProvider("m", api_key="k", http_client=sdk_client(Served(cut)))
    with pytest.raises(StreamFormatError, match=r"truncated.*no message_stop"):
        run(complete(provider, REQUEST))


def test_sdk_connection_error_is_mapped() -> None:
    module = sdk_http()

    def refuse(request: Any) -> Any:
        raise module.ConnectError("refused", request=request)

    http = module.AsyncClient(transport=module.MockTransport(refuse))
    provider = OpenAIChatSDKProvider("m", api_key="k", http_client=http, max_retries=0)
    with pytest.raises(ProviderError, match=r"openai-chat \(SDK\): APIConnectionError"):
        run(complete(provider, REQUEST))


@pytest.mark.parametrize(
    ("sdk_cls", "package"),
    [
        (AnthropicSDKProvider, "anthropic"),
        (OpenAIChatSDKProvider, "openai"),
        (OpenAIResponsesSDKProvider, "openai"),
    ],
)
def test_missing_sdk_is_a_provider_error(
    monkeypatch: pytest.MonkeyPatch, sdk_cls: Any, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # makes `import package` fail
    with pytest.raises(ProviderError, match=rf"the '{package}' SDK is not installed: pip install"):
        sdk_cls("m", api_key="k")


def test_sdk_without_credentials_is_a_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)
    # The openai SDK refuses at construction, the anthropic SDK when sending.
    with pytest.raises(ProviderError, match=r"openai-chat \(SDK\): cannot create the client"):
        OpenAIChatSDKProvider("m")
    denied = Served(json.dumps({"error": {"message": "no key"}}), status=401)
    provider = AnthropicSDKProvider("m", http_client=sdk_client(denied), max_retries=0)
    with pytest.raises(ProviderError, match=r"^anthropic \(SDK\): ") as info:
        run(complete(provider, REQUEST))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("cls", "variable", "base", "path"),
    [
        (AnthropicProvider, "ANTHROPIC_BASE_URL", "http://127.0.0.1:8080/proxy/", "/proxy/v1/messages"),
        (OpenAIChatProvider, "OPENAI_BASE_URL", "http://127.0.0.1:8080/v1", "/v1/chat/completions"),
        (OpenAIResponsesProvider, "OPENAI_BASE_URL", "https://gateway.test/openai/v1", "/openai/v1/responses"),
    ],
)  # fmt: skip
def test_live_providers_honour_the_base_url_variables(
    monkeypatch: pytest.MonkeyPatch, cls: Any, variable: str, base: str, path: str
) -> None:
    monkeypatch.setenv(variable, base)
    rel = (
        ANTHROPIC_TOOL
        if cls is AnthropicProvider
        else CHAT
        if cls is OpenAIChatProvider
        else RESPONSES
    )
    served = Served(body(rel))
    run(complete(cls("m", api_key="k", http_client=client(served)), REQUEST))
    (request,) = served.requests
    assert request.url.path == path and request.url.host == base.split("/")[2].split(":")[0]
    # An explicit base_url wins over the variable.
    served = Served(body(rel))
    run(
        complete(
            cls("m", api_key="k", base_url="http://10.0.0.1/v1", http_client=client(served)),
            REQUEST,
        )
    )
    assert served.requests[0].url.host == "10.0.0.1"


def test_a_bad_base_url_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8080")
    with pytest.raises(ProviderError, match="ANTHROPIC_BASE_URL='localhost:8080'"):
        AnthropicProvider("m", api_key="k")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    assert AnthropicProvider("m", api_key="k")._url == "https://api.anthropic.com/v1/messages"
