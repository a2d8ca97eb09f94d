"""Mutated recorded streams: every outcome is a valid message or a typed error.

Drop, repeat, swap and corrupt events of real recorded bodies; the normalizers
must then either produce a stream that keeps the contract, or raise a
`ProviderError` (usually `StreamFormatError`) - never any other exception.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from metis_runtime._errors import ProviderError
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import OpenAIChatNormalizer
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import WireNormalizer
from tests.runtime.test_providers_support import ANTHROPIC_EDITOR
from tests.runtime.test_providers_support import ANTHROPIC_MCP
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import RESPONSES_PHASE
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import data_lines
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import to_sse

SOURCES: list[tuple[type[WireNormalizer], list[dict[str, Any]], bool]] = [
    (AnthropicNormalizer, data_lines(body(ANTHROPIC_TOOL)), False),
    (AnthropicNormalizer, data_lines(body(ANTHROPIC_EDITOR)), False),
    (AnthropicNormalizer, data_lines(body(ANTHROPIC_MCP)), False),
    (OpenAIChatNormalizer, data_lines(body(CHAT)), True),
    (OpenAIChatNormalizer, data_lines(body(CHAT, 1)), True),
    (OpenAIResponsesNormalizer, data_lines(body(RESPONSES)), False),
    (OpenAIResponsesNormalizer, data_lines(body(RESPONSES_PHASE)), False),
]
ODD_VALUES = st.sampled_from([None, 0, -1, 7, "", "x", "{", [], {}, True, 1.5])


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside an event, to corrupt one of them."""
    out: list[tuple[Any, ...]] = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        out.append((*prefix, key))
        out.extend(paths(value, (*prefix, key)))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> tuple[type[WireNormalizer], str]:
    cls, recorded, done = draw(st.sampled_from(SOURCES))
    events = copy.deepcopy(recorded)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        if not events:
            break
        i = draw(st.integers(min_value=0, max_value=len(events) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap", "set", "delete"]))
        if op == "drop":
            events.pop(i)
        elif op == "repeat":
            events.insert(i, copy.deepcopy(events[i]))
        elif op == "swap":
            j = draw(st.integers(min_value=0, max_value=len(events) - 1))
            events[i], events[j] = events[j], events[i]
        else:
            targets = paths(events[i])
            if not targets:
                continue
            path = draw(st.sampled_from(targets))
            parent = events[i]
            for key in path[:-1]:
                parent = parent[key]
            if op == "set":
                parent[path[-1]] = draw(ODD_VALUES)
            elif isinstance(parent, dict):
                del parent[path[-1]]
    return cls, to_sse(events, named=cls is not OpenAIChatNormalizer, done=done)


def _refused_in_one_line_or_valid(cls: type[WireNormalizer], sse_body: str) -> None:
    """`sse_body` through `cls`: a one-line ProviderError, or a valid stream."""
    try:
        events = normalize(cls(), sse_body)
    except ProviderError as exc:
        assert "\n" not in str(exc)
        return
    check_stream(events)


@given(mutated())
def test_mutated_streams_never_crash(case: tuple[type[WireNormalizer], str]) -> None:
    cls, sse_body = case
    _refused_in_one_line_or_valid(cls, sse_body)


@given(st.data())
def test_corrupted_bytes_never_crash(data: st.DataObject) -> None:
    cls, recorded, done = data.draw(st.sampled_from(SOURCES))
    text = to_sse(recorded, named=cls is not OpenAIChatNormalizer, done=done)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        at = data.draw(st.integers(min_value=0, max_value=len(text)))
        junk = data.draw(st.text(alphabet='{}[]":,\n\r 0aé\\', max_size=3))
        cut = data.draw(st.integers(min_value=0, max_value=3))
        text = text[:at] + junk + text[at + cut :]
    _refused_in_one_line_or_valid(cls, text)
