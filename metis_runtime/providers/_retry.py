"""When and how long to wait before asking a provider again.

A request is retried only while the caller has seen nothing of its answer:
an HTTP status in `RETRY_STATUSES`, a connection that failed before the first
byte of a response, or an in-stream error of a kind in `TRANSIENT_STREAM_ERRORS`
before any stream event was yielded. Once an event was yielded the loop has
consumed part of an answer, and a failure is final.

The wait is the server's (`retry-after-ms`, then `retry-after` in seconds or
as an HTTP date, capped at `max_retry_after`), else exponential backoff with
full jitter: uniform in [0, min(cap, base * factor**n)) before retry n
(0-based). `sleep`, `rand` and `clock` are injectable, so tests neither sleep
nor depend on chance.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from datetime import UTC
from typing import Any

from attrs import field
from attrs import frozen

# 408 timeout, 409 lock conflict, 429 rate limit, 5xx gateway trouble, 529 Anthropic overloaded.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

# In-stream error kinds that say "try later": Anthropic's `error.type`, OpenAI's
# `error.type` / `error.code` (Chat Completions, Responses `error` and `response.failed`).
TRANSIENT_STREAM_ERRORS = frozenset(
    {"overloaded_error", "rate_limit_error", "rate_limit_exceeded", "server_is_overloaded"}
)


def _count(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{attribute.name} must be an integer >= 0, got {value!r}")


def _seconds(_: Any, attribute: Any, value: Any) -> None:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def _factor(_: Any, attribute: Any, value: Any) -> None:
    _seconds(_, attribute, value)
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value!r}")


@frozen
class RetryPolicy:
    """How often and how long to retry a request that failed transiently.

    `max_retries` is the number of retries after the first attempt (0 disables
    retrying; 2, as in the official SDKs, by default).
    """

    max_retries: int = field(default=2, validator=_count)
    base: float = field(default=0.5, validator=_seconds)
    factor: float = field(default=2.0, validator=_factor)
    cap: float = field(default=30.0, validator=_seconds)
    max_retry_after: float = field(default=60.0, validator=_seconds)
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, eq=False, repr=False)
    rand: Callable[[], float] = field(default=random.random, eq=False, repr=False)
    clock: Callable[[], float] = field(default=time.time, eq=False, repr=False)

    def backoff(self, retry: int) -> float:
        """Full jitter before retry `retry` (0-based): in [0, min(cap, base * factor**retry)]."""
        try:
            grown = self.base * self.factor ** max(retry, 0)
        except OverflowError:
            grown = math.inf if self.base > 0 else 0.0
        ceiling = min(self.cap, grown)
        share = self.rand()
        share = min(max(share, 0.0), 1.0) if math.isfinite(share) else 1.0
        return share * ceiling

    def server_delay(self, headers: Mapping[str, str] | None) -> float | None:
        """The wait the server asked for, capped at `max_retry_after`; None if it named none."""
        if not headers:
            return None
        delay = _milliseconds(headers.get("retry-after-ms"))
        if delay is None:
            delay = self._retry_after(headers.get("retry-after"))
        if delay is None:
            return None
        return min(max(delay, 0.0), self.max_retry_after)

    def delay(self, retry: int, headers: Mapping[str, str] | None = None) -> float:
        """How long to wait before retry `retry` (0-based)."""
        server = self.server_delay(headers)
        return self.backoff(retry) if server is None else server

    def _retry_after(self, value: str | None) -> float | None:
        if value is None:
            return None
        value = value.strip()
        try:
            seconds = float(value)
        except ValueError:
            pass
        else:
            return seconds if math.isfinite(seconds) else None
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp() - self.clock()


NO_RETRY = RetryPolicy(max_retries=0)


def _milliseconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        ms = float(value)
    except ValueError:
        return None
    return ms / 1000 if math.isfinite(ms) else None


def transient_stream_error(data: str) -> bool:
    """Whether an SSE payload is an error event that says "try later"."""
    try:
        payload = json.loads(data)
    except ValueError:
        return False
    if not isinstance(payload, Mapping):
        return False
    response = payload.get("response")
    for place in (
        payload,
        payload.get("error"),
        response.get("error") if isinstance(response, Mapping) else None,
    ):
        if isinstance(place, Mapping) and any(
            isinstance(kind, str) and kind in TRANSIENT_STREAM_ERRORS
            for kind in (place.get("type"), place.get("code"))
        ):
            return True
    return False
