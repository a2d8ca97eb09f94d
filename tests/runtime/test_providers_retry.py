"""Retry with backoff of the httpx providers, over recorded bodies.

No network and no real sleeping: each test serves a scripted sequence of
answers (recorded SSE bodies, error statuses with the vendors' error shapes,
transport failures) through `httpx.MockTransport`, and the policy's `sleep`,
`rand` and `clock` are injected.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from metis_cli import _run as run_cli
from metis_runtime._errors import ConfigError
from metis_runtime._errors import ProviderError
from metis_runtime._errors import StreamFormatError
from metis_runtime.assemble import root_provider
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import AnthropicSDKProvider
from metis_runtime.providers import Cassette
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Interaction
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import OpenAIChatNormalizer
from metis_runtime.providers import OpenAIChatProvider
from metis_runtime.providers import OpenAIChatSDKProvider
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import OpenAIResponsesProvider
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import RetryPolicy
from metis_runtime.providers import StreamEvent
from metis_runtime.providers import WireNormalizer
from metis_runtime.providers import complete
from metis_runtime.providers._retry import RETRY_STATUSES
from metis_runtime.providers._retry import transient_stream_error
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import drain
from tests.runtime.test_providers_support import drain_into
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import run

REQUEST = ModelRequest(
    system="Be brief.", messages=(Message.user("What is 2 + 2?"),), max_tokens=64
)

# The vendors' error bodies, as their APIs send them.
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
RATE_LIMITED = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
OPENAI_RATE_LIMITED = {
    "error": {
        "message": "Rate limit reached for requests",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
BAD_REQUEST = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool"}}


def sse(payload: dict[str, Any], event: str | None = "error") -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n"


class Answer:
    """One scripted answer: a status with a body and headers, or a transport failure."""

    def __init__(
        self,
        body: str | dict[str, Any] = "",
        status: int = 200,
        headers: dict[str, str] | None = None,
        raises: type[httpx.TransportError] | None = None,
    ) -> None:
        self.text = body if isinstance(body, str) else json.dumps(body)
        self.status = status
        json_body = not isinstance(body, str) or status >= 300
        content_type = "application/json" if json_body else "text/event-stream"
        self.headers = {"content-type": content_type, **(headers or {})}
        self.raises = raises


class Script:
    """A MockTransport handler that gives its answers in order, one per request."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers[len(self.requests) - 1]
        if answer.raises is not None:
            raise answer.raises("scripted failure", request=request)
        return httpx.Response(answer.status, headers=answer.headers, content=answer.text)


class Sleeps:
    """The injected sleep: records each wait and how many requests came before it."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.waits: list[float] = []
        self.after: list[int] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.after.append(len(self.script.requests))


def policy(sleeps: Sleeps, max_retries: int = 2, rand: float = 0.5, **kw: Any) -> RetryPolicy:
    return RetryPolicy(max_retries=max_retries, sleep=sleeps, rand=lambda: rand, **kw)


def anthropic(script: Script, retry: RetryPolicy) -> AnthropicProvider:
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    return AnthropicProvider("m", api_key="k", http_client=http, retry=retry)


def setup(*answers: Answer, **kw: Any) -> tuple[Script, Sleeps, AnthropicProvider]:
    script = Script(*answers)
    sleeps = Sleeps(script)
    return script, sleeps, anthropic(script, policy(sleeps, **kw))


RECORDED = body(ANTHROPIC_TOOL)


# --- what is retried ---------------------------------------------------------------------


WIRES: list[tuple[str, type[Any], type[WireNormalizer], int, dict[str, Any]]] = [
    (ANTHROPIC_TOOL, AnthropicProvider, AnthropicNormalizer, 529, OVERLOADED),
    (CHAT, OpenAIChatProvider, OpenAIChatNormalizer, 503, OPENAI_RATE_LIMITED),
    (RESPONSES, OpenAIResponsesProvider, OpenAIResponsesNormalizer, 429, OPENAI_RATE_LIMITED),
]


@pytest.mark.parametrize(
    ("rel", "cls", "norm", "status", "error"),
    WIRES,
    ids=["anthropic-529", "chat-503", "responses-429"],
)
def test_transient_status_then_recorded_stream_yields_one_stream(
    rel: str, cls: type[Any], norm: type[WireNormalizer], status: int, error: dict[str, Any]
) -> None:
    script = Script(Answer(error, status=status), Answer(body(rel)))
    sleeps = Sleeps(script)
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    provider = cls("m", api_key="k", http_client=http, retry=policy(sleeps))
    events = run(drain(provider.stream(REQUEST)))
    check_stream(events)
    assert events == normalize(norm(), body(rel))  # exactly the events of one stream
    assert len(script.requests) == 2
    assert script.requests[0].content == script.requests[1].content  # the same request again
    assert sleeps.waits == [0.25] and sleeps.after == [1]  # rand 0.5 * base 0.5, between them


@pytest.mark.parametrize("status", sorted(RETRY_STATUSES))
def test_every_transient_status_is_retried(status: int) -> None:
    script, sleeps, provider = setup(Answer(RATE_LIMITED, status=status), Answer(RECORDED))
    run(complete(provider, REQUEST))
    assert len(script.requests) == 2 and len(sleeps.waits) == 1


def test_retry_after_seconds_is_honoured() -> None:
    _script, sleeps, provider = setup(
        Answer(RATE_LIMITED, status=429, headers={"retry-after": "2"}), Answer(RECORDED)
    )
    message = run(complete(provider, REQUEST))
    assert message.stop_reason == "tool_use"
    assert sleeps.waits == [2.0]


def test_retry_after_ms_wins_over_retry_after() -> None:
    _script, sleeps, provider = setup(
        Answer(OVERLOADED, status=529, headers={"retry-after-ms": "1500", "retry-after": "9"}),
        Answer(RECORDED),
    )
    run(complete(provider, REQUEST))
    assert sleeps.waits == [1.5]


def test_retry_after_as_http_date_uses_the_clock() -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    date = format_datetime(now.replace(second=7), usegmt=True)  # "Sat, 01 Mar 2025 12:00:07 GMT"
    script = Script(Answer(RATE_LIMITED, status=429, headers={"retry-after": date}))
    script.answers.append(Answer(RECORDED))
    sleeps = Sleeps(script)
    retry = policy(sleeps, clock=now.timestamp)
    run(complete(anthropic(script, retry), REQUEST))
    assert sleeps.waits == [7.0]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3600"}, 60.0),  # capped at max_retry_after
        ({"retry-after-ms": "120000"}, 60.0),
        ({"retry-after": "-5"}, 0.0),
        ({"retry-after": "Sat, 01 Mar 2025 11:59:00 GMT"}, 0.0),  # a date in the past
        ({"retry-after": "soon"}, 0.25),  # unreadable: backoff
        ({"retry-after": "nan"}, 0.25),
        ({"retry-after-ms": "x", "retry-after": "4"}, 4.0),
        ({}, 0.25),
    ],
)
def test_server_delay_rules(headers: dict[str, str], expected: float) -> None:
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    retry = RetryPolicy(rand=lambda: 0.5, clock=lambda: now)
    assert retry.delay(0, httpx.Headers(headers)) == expected


def test_connect_errors_before_the_first_byte_are_retried() -> None:
    script, sleeps, provider = setup(
        Answer(raises=httpx.ConnectError),
        Answer(raises=httpx.ConnectTimeout),
        Answer(RECORDED),
    )
    events = run(drain(provider.stream(REQUEST)))
    assert events == normalize(AnthropicNormalizer(), RECORDED)
    assert len(script.requests) == 3
    assert sleeps.waits == [0.25, 0.5]  # rand 0.5 * min(30, 0.5 * 2**n)


def test_disconnect_before_any_response_is_retried() -> None:
    script, _sleeps, provider = setup(Answer(raises=httpx.RemoteProtocolError), Answer(RECORDED))
    run(complete(provider, REQUEST))
    assert len(script.requests) == 2


def test_read_timeout_is_not_retried() -> None:
    script, sleeps, provider = setup(Answer(raises=httpx.ReadTimeout), Answer(RECORDED))
    with pytest.raises(ProviderError, match="ReadTimeout") as info:
        run(complete(provider, REQUEST))
    assert "attempts" not in str(info.value)
    assert len(script.requests) == 1 and sleeps.waits == []


@pytest.mark.parametrize(
    "first",
    [
        sse(OVERLOADED),  # the very first event
        sse(RATE_LIMITED),
        # message_start and ping give the caller nothing: still safe to ask again
        sse({"type": "message_start", "message": {"id": "msg_1"}}, "message_start")
        + sse({"type": "ping"}, "ping")
        + sse(OVERLOADED),
    ],
    ids=["overloaded", "rate_limit", "after-message_start"],
)
def test_in_stream_overload_before_any_event_is_retried(first: str) -> None:
    script, sleeps, provider = setup(Answer(first), Answer(RECORDED))
    events = run(drain(provider.stream(REQUEST)))
    assert events == normalize(AnthropicNormalizer(), RECORDED)
    assert len(script.requests) == 2 and sleeps.waits == [0.25]


@pytest.mark.parametrize(
    ("cls", "norm", "rel", "first"),
    [
        (OpenAIChatProvider, OpenAIChatNormalizer, CHAT, sse(OPENAI_RATE_LIMITED, None)),
        (
            OpenAIResponsesProvider,
            OpenAIResponsesNormalizer,
            RESPONSES,
            sse({"type": "error", "code": "rate_limit_exceeded", "message": "slow down",
                 "param": None, "sequence_number": 0}),
        ),
        (
            OpenAIResponsesProvider,
            OpenAIResponsesNormalizer,
            RESPONSES,
            sse({"type": "response.created", "sequence_number": 0,
                 "response": {"id": "resp_1", "status": "in_progress"}}, "response.created")
            + sse({"type": "response.failed", "sequence_number": 1,
                   "response": {"id": "resp_1", "status": "failed",
                                "error": {"code": "server_is_overloaded", "message": "busy"}}},
                  "response.failed"),
        ),
    ],
    ids=["chat-error", "responses-error", "responses-failed"],
)  # fmt: skip
def test_openai_in_stream_rate_limit_before_any_event_is_retried(
    cls: type[Any], norm: type[WireNormalizer], rel: str, first: str
) -> None:
    script = Script(Answer(first), Answer(body(rel)))
    sleeps = Sleeps(script)
    http = httpx.AsyncClient(transport=httpx.MockTransport(script))
    provider = cls("m", api_key="k", http_client=http, retry=policy(sleeps))
    events = run(drain(provider.stream(REQUEST)))
    assert events == normalize(norm(), body(rel))
    assert len(script.requests) == 2


# --- what is not retried -----------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501])
def test_other_statuses_are_not_retried(status: int) -> None:
    script, sleeps, provider = setup(Answer(BAD_REQUEST, status=status), Answer(RECORDED))
    with pytest.raises(ProviderError, match=f"HTTP {status} .*invalid_request_error: bad tool$"):
        run(complete(provider, REQUEST))
    assert len(script.requests) == 1 and sleeps.waits == []


@pytest.mark.parametrize(
    ("status", "payload"),
    [
        (413, {"type": "error", "error": {"type": "request_too_large", "message": "Too big"}}),
        (400, {"type": "error", "error": {"type": "invalid_request_error",
                                          "message": "prompt is too long: 205351 > 200000"}}),
    ],
)  # fmt: skip
def test_overflow_raises_context_overflow_at_once(status: int, payload: dict[str, Any]) -> None:
    script, sleeps, provider = setup(Answer(payload, status=status), Answer(RECORDED))
    with pytest.raises(ContextOverflowError, match=f"HTTP {status}"):
        run(complete(provider, REQUEST))
    assert len(script.requests) == 1 and sleeps.waits == []


def test_exhausted_retries_raise_the_last_error_naming_the_attempts() -> None:
    script, sleeps, provider = setup(*[Answer(OVERLOADED, status=529)] * 3, rand=1.0)
    with pytest.raises(ProviderError) as info:
        run(complete(provider, REQUEST))
    assert type(info.value) is ProviderError
    assert str(info.value) == (
        "anthropic: HTTP 529 from https://api.anthropic.com/v1/messages: "
        "overloaded_error: Overloaded (after 3 attempts)"
    )
    assert len(script.requests) == 3
    assert sleeps.waits == [0.5, 1.0] and sleeps.after == [1, 2]


def test_exhausted_connect_retries_keep_the_cause() -> None:
    _script, _sleeps, provider = setup(*[Answer(raises=httpx.ConnectError)] * 2, max_retries=1)
    with pytest.raises(ProviderError, match=r"failed: ConnectError: .*\(after 2 attempts\)$") as e:
        run(complete(provider, REQUEST))
    assert isinstance(e.value.__cause__, httpx.ConnectError)


def test_a_final_non_transient_error_names_the_attempts_too() -> None:
    _script, _sleeps, provider = setup(Answer(OVERLOADED, status=529), Answer(BAD_REQUEST, 400))
    with pytest.raises(ProviderError, match=r"HTTP 400 .*bad tool \(after 2 attempts\)$"):
        run(complete(provider, REQUEST))


def recorded_prefix_then(tail: str) -> str:
    """The recorded stream up to its first content delta, then `tail`."""
    head, rest = RECORDED.split("event: content_block_delta", 1)
    first_delta = "event: content_block_delta" + rest.split("\n\n", 1)[0] + "\n\n"
    return head + first_delta + tail


def test_in_stream_error_after_the_first_event_is_not_retried() -> None:
    script, sleeps, provider = setup(Answer(recorded_prefix_then(sse(OVERLOADED))))
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError, match=r"overloaded_error: Overloaded$"):
        run(drain_into(seen, provider.stream(REQUEST)))
    assert seen  # the caller had part of an answer
    assert len(script.requests) == 1 and sleeps.waits == []


def test_connection_lost_after_the_first_event_is_not_retried() -> None:
    cut = recorded_prefix_then("").encode()

    async def broken() -> AsyncIterator[bytes]:
        yield cut
        raise httpx.RemoteProtocolError("peer closed connection")

    requests: list[httpx.Request] = []

    def serve(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=broken())

    sleeps = Sleeps(Script())
    http = httpx.AsyncClient(transport=httpx.MockTransport(serve))
    provider = AnthropicProvider("m", api_key="k", http_client=http, retry=policy(sleeps))
    with pytest.raises(ProviderError, match="RemoteProtocolError"):
        run(complete(provider, REQUEST))
    assert len(requests) == 1 and sleeps.waits == []


def test_in_stream_errors_of_other_kinds_are_not_retried() -> None:
    script, _sleeps, provider = setup(Answer(sse(BAD_REQUEST)), Answer(RECORDED))
    with pytest.raises(ProviderError, match=r"invalid_request_error: bad tool$"):
        run(complete(provider, REQUEST))
    assert len(script.requests) == 1


def test_malformed_first_event_is_not_retried() -> None:
    script, _sleeps, provider = setup(Answer("event: error\ndata: {not json\n\n"), Answer(RECORDED))
    with pytest.raises(StreamFormatError):
        run(complete(provider, REQUEST))
    assert len(script.requests) == 1


def test_max_retries_zero_disables_retrying() -> None:
    script, sleeps, provider = setup(Answer(OVERLOADED, status=529), max_retries=0)
    with pytest.raises(ProviderError) as info:
        run(complete(provider, REQUEST))
    assert str(info.value).endswith("overloaded_error: Overloaded")  # today's message, as is
    assert len(script.requests) == 1 and sleeps.waits == []


def test_replay_never_retries_a_recorded_failure(tmp_path: Path) -> None:
    failed = Interaction(
        uri="https://api.anthropic.com/v1/messages",
        wire="anthropic",
        base_url="https://api.anthropic.com",
        status=529,
        body=json.dumps(OVERLOADED),
        content_type="application/json",
    )
    replay = ReplayProvider(Cassette(tmp_path / "c.yaml", (failed,)))
    with pytest.raises(ProviderError, match="HTTP 529") as info:
        run(complete(replay, REQUEST))
    assert "attempts" not in str(info.value)
    assert len(replay.sent) == 1


def test_providers_retry_twice_by_default() -> None:
    assert AnthropicProvider("m").retry.max_retries == 2
    assert OpenAIResponsesProvider("m").retry == RetryPolicy()


# --- the policy --------------------------------------------------------------------------


@given(
    retry=st.integers(min_value=0, max_value=5000),
    share=st.floats(min_value=0.0, max_value=1.0),
    base=st.floats(min_value=0.0, max_value=10.0),
    cap=st.floats(min_value=0.0, max_value=120.0),
)
def test_full_jitter_stays_within_its_bounds(
    retry: int, share: float, base: float, cap: float
) -> None:
    policy = RetryPolicy(base=base, cap=cap, rand=lambda: share)
    wait = policy.backoff(retry)
    # Past 2**1023 a float overflows: the ceiling is the cap, unless nothing grows.
    grown = base * 2.0**retry if retry < 1000 else (math.inf if base > 0 else 0.0)
    ceiling = min(cap, grown)
    assert 0.0 <= wait <= ceiling <= cap
    assert math.isclose(wait, share * ceiling, rel_tol=1e-12, abs_tol=1e-12)


@given(share=st.floats(allow_nan=True, allow_infinity=True))
def test_a_wayward_random_source_cannot_leave_the_bounds(share: float) -> None:
    wait = RetryPolicy(rand=lambda: share).backoff(3)
    assert 0.0 <= wait <= 4.0


@given(retry=st.integers(min_value=0, max_value=100))
def test_backoff_ceiling_grows_then_stays_at_the_cap(retry: int) -> None:
    top = RetryPolicy(rand=lambda: 1.0)
    assert top.backoff(retry) == min(30.0, 0.5 * 2**retry)
    assert top.backoff(retry) <= top.backoff(retry + 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"max_retries": True},
        {"max_retries": 1.5},
        {"base": -0.1},
        {"cap": math.inf},
        {"factor": 0.5},
        {"max_retry_after": math.nan},
    ],
)
def test_policy_refuses_nonsense(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize(
    ("payload", "transient"),
    [
        (OVERLOADED, True),
        (RATE_LIMITED, True),
        (OPENAI_RATE_LIMITED, True),
        ({"type": "error", "code": "server_is_overloaded", "message": "busy"}, True),
        ({"type": "response.failed", "response": {"error": {"code": "rate_limit_exceeded"}}}, True),
        (BAD_REQUEST, False),
        ({"type": "error", "error": {"type": "api_error", "message": "Internal"}}, False),
        ({"error": {"type": ["overloaded_error"]}}, False),
        ([OVERLOADED], False),
    ],
)
def test_transient_stream_error_kinds(payload: Any, transient: bool) -> None:
    assert transient_stream_error(json.dumps(payload)) is transient
    assert transient_stream_error("not json") is False


# --- the SDK path: the SDK's own retries -------------------------------------------------


@pytest.mark.parametrize("sdk_cls", [AnthropicSDKProvider, OpenAIChatSDKProvider])
def test_sdk_providers_pass_max_retries_to_the_client(sdk_cls: Callable[..., Any]) -> None:
    pytest.importorskip("anthropic" if sdk_cls is AnthropicSDKProvider else "openai")
    provider = sdk_cls("m", api_key="k", max_retries=5)
    assert provider._client.max_retries == 5
    assert sdk_cls("m", api_key="k")._client.max_retries == 2


# --- metis run --max-retries -------------------------------------------------------------


def test_cli_builds_live_providers_with_the_policy() -> None:
    made = root_provider({"provider": "anthropic", "model": "m", "max_retries": 5})
    assert isinstance(made, AnthropicProvider) and made.retry.max_retries == 5
    # a run journalled before the option existed: the default
    made = root_provider({"provider": "openai", "model": "m"})
    assert isinstance(made, OpenAIChatProvider) and made.retry.max_retries == 2


def test_unusable_journalled_max_retries_is_a_one_line_config_error() -> None:
    # The assembly's ConfigError, which `metis run` prints as this one line, exit 2.
    with pytest.raises(ConfigError) as info:
        root_provider({"provider": "anthropic", "model": "m", "max_retries": "x"})
    assert str(info.value) == "max_retries must be an integer >= 0, got 'x'"


@pytest.mark.parametrize("value", ["-1", "many"])
def test_cli_bad_max_retries_is_one_line_exit_2(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(
        run_cli.run, ["--max-retries", value, "--workspace", str(tmp_path)], catch_exceptions=False
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("metis run: error: "), result.stderr
    assert "--max-retries" in lines[0]


def test_cli_help_lists_max_retries() -> None:
    result = CliRunner().invoke(run_cli.run, ["--help"])
    assert "--max-retries" in result.stdout and "[default: 2;" in result.stdout
