"""The trace's fast JSON encoding means what the stdlib encoding meant.

`Redactor.json_line` writes with pydantic-core where it can (ASCII escapes
where the text is not ASCII, the stdlib encoder where pydantic-core cannot),
screens the line for credentials by literal substrings and only then redacts
every string. The reference below is the definition: every string redacted,
written by the stdlib ASCII encoder.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime import REDACTED
from metis_runtime import Redactor
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime._trace import _micro
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectOutcome
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import ToolKind
from metis_trace import read_trace

_STDLIB = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")


def _reference(redactor: Redactor, obj: Any) -> Any:
    return json.loads(_STDLIB(redactor.value(obj)))


def _check_line(line: str) -> None:
    assert line.isascii()
    assert not any(c in line for c in _LINE_BREAKS)


# Text with the credential shapes and their near misses, escapes and non-ASCII.
_FRAGMENTS = st.sampled_from(
    [
        "sk-abcdefgh12345",
        "sk-short",
        "SK-abcdefgh12345",
        "ghp_abcdefghijklmnop0123",
        "gho_abcdefghijklmnop0123",
        "github_pat_abcdefghijklmnop_01",
        "Bearer tok.en-1",
        "bearer x",
        "OPENAI_API_KEY=abc",
        "db_secret='a b'",
        'X_Token="q"',
        "_\u212aEY=kelvin",  # Kelvin sign: `(?i)_KEY` matches it
        "_\u017fECRET=long-s",
        "s3cr3t\x7fvalue",
        "caf\u00e9",
        "\u2028",
        "\U0001f600",
        '\x00\x1f"\\/',
        "=",
        "-",
        "gh",
        " ",
    ]
)
_TEXT = st.one_of(st.text(max_size=12), st.lists(_FRAGMENTS, max_size=4).map("".join))
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    _TEXT,
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(_TEXT, inner, max_size=4),
    ),
    max_leaves=12,
)
_ENV = {"SERVICE_TOKEN": "s3cr3t\x7fvalue", "OTHER_KEY": "caf\u00e9-secret", "SHORT_KEY": "ab"}


@settings(max_examples=400)
@given(_JSON)
@example({"a": "\ud800"})  # a lone surrogate: only the stdlib encoder writes it
@example({"k": float("inf"), "n": -float("inf")})
@example({"big": 2**100, "tiny": 1e-07, "huge": 1e16, "neg": -0.0})
@example({"\u212a": ["_\u212aEY=x", ("Bearer y",)]})
def test_json_line_means_the_reference(obj: Any) -> None:
    redactor = Redactor(_ENV)
    line = redactor.json_line(obj)
    _check_line(line)
    assert json.loads(line) == _reference(redactor, obj)
    assert redactor.json_bytes(obj) == line.encode("ascii")


def test_enums_models_and_tuples_are_written_as_their_json() -> None:
    redactor = Redactor({})
    ref = RuleRef(behavior=RuleBehavior.DENY, source=Source.CLI, pattern="Bash(rm:*)", recency=3)
    facts = Facts(mode=Mode.DEFAULT, kind=ToolKind.EXEC, rules=(ref,))
    obj = {"d": Decision.ASK, "facts": facts, "t": (1, (2,)), "nested": [{"r": ref}]}
    want = {
        "d": "ask",
        "facts": facts.model_dump(mode="json"),
        "t": [1, [2]],
        "nested": [{"r": ref.model_dump(mode="json")}],
    }
    assert json.loads(redactor.json_line(obj)) == want
    secret = RuleRef(behavior=RuleBehavior.ALLOW, source=Source.CLI, pattern="Bash(A_TOKEN=x1)")
    assert json.loads(redactor.json_line({"rules": [secret]}))["rules"][0]["pattern"] == (
        f"Bash(A_TOKEN={REDACTED})"
    )


def test_unknown_types_still_fail_as_before() -> None:
    with pytest.raises(TypeError):
        Redactor({}).json_line({"x": object()})


def test_infinities_read_back() -> None:
    line = Redactor({}).json_line({"a": float("inf"), "b": float("nan")})
    back = json.loads(line)
    assert back["a"] == math.inf and math.isnan(back["b"])


# --- the trace writer ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["caf\u00e9 \u2028 line\u2029sep \x85 \U0001f600", "lone \ud800 surrogate", "plain"],
)
def test_non_ascii_events_round_trip_as_ascii_lines(text: str, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    header = make_header(mode=Mode.DEFAULT, tools=("r\u00e9sum\u00e9",))
    with TraceWriter(path, header) as w:
        w.emit("interrupt", (), reason=text)
    raw = path.read_bytes()
    assert raw.isascii() and raw.count(b"\n") == 2
    for line in raw.decode("ascii").splitlines():
        _check_line(line)
    with path.open(encoding="utf-8") as fh:
        back, events = read_trace(fh)
    assert back == w.header  # the header as written (meta gains the clock mapping)
    assert [e.reason for e in events] == [text]  # type: ignore[union-attr]


def test_decision_events_read_back_as_they_were_made() -> None:
    buf = io.StringIO()
    w = TraceWriter(buf, make_header(mode=Mode.DEFAULT, tools=("noop",)))
    made: list[DecisionEvent] = []
    for i in range(300):  # more than the writer keeps dumps of; ids get reused
        ref = RuleRef(behavior=RuleBehavior.ASK, source=Source.PROJECT, pattern=f"t{i}", recency=i)
        facts = Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY, secret=i % 2 == 0, rules=(ref,))
        if made and i % 3 == 0:
            facts = made[-1].facts  # the same Facts again, as the gate hands out
        causes = (made[-1].seq,) if made else ()
        fields: dict[str, Any] = {
            "occ": f"{i}.0",
            "decision": Decision.ASK,
            "stage": "ask_rule",
            "rule": facts.rules[0],
            "facts": facts,
            "route": Route.HEADLESS,
            "cls": CallClass.SAFE,
            "key": None,
        }
        seq = w.emit("decision", causes, **fields)
        made.append(DecisionEvent(seq=seq, t=0.0, causes=causes, **fields))
    _, events = read_trace(buf.getvalue().splitlines())
    assert [e.model_copy(update={"t": 0.0}) for e in events] == made


def test_enum_fields_are_written_as_their_values() -> None:
    buf = io.StringIO()
    w = TraceWriter(buf, make_header(mode=Mode.DEFAULT, tools=()))
    w.emit("effect_end", (), occ="1.0", outcome=EffectOutcome.OK, committed=False)
    w.emit("result", (0,), occ="1.0", call_id="c0", status=ResultStatus.OK, content="ok")
    lines = buf.getvalue().splitlines()
    assert '"outcome":"ok","committed":false}' in lines[1]
    assert '"status":"ok","content":"ok"}' in lines[2]


def test_a_secret_inside_a_model_field_never_reaches_the_trace() -> None:
    buf = io.StringIO()
    w = TraceWriter(buf, make_header(mode=Mode.DEFAULT, tools=()), redactor=Redactor({}))
    ref = RuleRef(behavior=RuleBehavior.ALLOW, source=Source.CLI, pattern="Bash(GH_TOKEN=abc9)")
    w.emit("interrupt", (), reason="x", rule=ref)
    assert "abc9" not in buf.getvalue() and REDACTED in buf.getvalue()


@given(st.floats(min_value=-1e7, max_value=1e9, allow_nan=False))
@example(0.0000005)
@example(1.0000005)
@example(2.5e-06)
@example(123.4565)
@example(1e12)
@example(-3.0000005)
def test_micro_is_round_to_six_places(x: float) -> None:
    assert _micro(x) == round(x, 6)
    for tie in (x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf)):
        half = math.floor(tie * 1e6) / 1e6 + 5e-7
        assert _micro(half) == round(half, 6)
