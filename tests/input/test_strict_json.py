"""Strict JSON: what `decode_json` refuses, where it says the problem is, and
that it means what `json.loads` means on everything else."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_trace import InputError
from metis_trace import JsonLimits
from metis_trace import check_json_value
from metis_trace import decode_json
from metis_trace import raw_decode_json


def _error(text: str, **kw: Any) -> InputError:
    with pytest.raises(InputError) as info:
        decode_json(text, **kw)
    return info.value


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"t": NaN}', 1, "t: NaN is not a JSON number"),
        ('{"a": [1, {"t": -Infinity}]}', 1, "a[1].t: -Infinity is not a JSON number"),
        ('{"t": Infinity}', 1, "t: Infinity is not a JSON number"),
        ('{"t": 1e999}', 1, "t: number 1e999 is beyond the range of a float"),
        ('{"t": -1e400}', 1, "t: number -1e400 is beyond the range of a float"),
        ('{"t": ' + "9" * 400 + ".0}", 1, "t: number 9999"),
        ('{"n": ' + "1" * 5000 + "}", 1, "n: integer beyond the limit of 9223372036854775807"),
        ('{"n": 9223372036854775808}', 1, "n: integer beyond the limit"),
        ('{"n": -9223372036854775808}', 1, "n: integer beyond the limit"),
        ('{"seq": 1, "seq": 2}', 1, "seq: duplicate key 'seq'"),
        ('{"a": {"b": [{"c": 1, "c": 1}]}}', 1, "a.b[0].c: duplicate key 'c'"),
        ("[" * 101 + "]" * 101, 1, "nested deeper than 100 levels (METIS_MAX_JSON_DEPTH)"),
        ("[" * 100_000, 1, "nested deeper than 100 levels"),
        ('{\n "a": 1,\n "b": [\n  1,\n  NaN\n ]\n}', 5, "b[1]: NaN is not a JSON number"),
        ('{"a": 1} {"b": 2}', 1, "not valid JSON (extra data after the value)"),
        ('{"a": tru}', 1, "not valid JSON (Expecting value at column 7)"),
        ("", 1, "not valid JSON (Expecting value at column 1)"),
    ],
)
def test_rejected_with_line_and_field(text: str, line: int, message: str) -> None:
    err = _error(text, source="f.json")
    assert err.line == line
    assert message in err.message, err.message
    assert str(err).startswith(f"f.json: line {line}: ")
    assert "\n" not in str(err)


def test_the_line_counts_from_where_the_text_starts() -> None:
    assert _error('{"t": NaN}', line=7).line == 7
    text = '[1,\n2]\n{"x": [Infinity]}'
    with pytest.raises(InputError) as info:
        raw_decode_json(text, 7, line=10)
    assert info.value.line == 12
    assert info.value.message == "x[0]: Infinity is not a JSON number"


def test_a_long_path_is_cut_but_keeps_its_start() -> None:
    err = _error('{"root": ' + "[" * 150 + "]" * 150 + "}")
    assert err.message.startswith("root[0][0]")
    assert "...: nested deeper" in err.message
    assert len(err.message) < 160


def test_limits_are_values() -> None:
    small = JsonLimits(max_depth=2, max_int=1000)
    assert decode_json("[[1000]]", limits=small) == [[1000]]
    assert "nested deeper than 2" in _error("[[[1]]]", limits=small).message
    assert "limit of 1000" in _error("[-1001]", limits=small).message
    assert "limit of 1000" in _error('{"a": 12345}', limits=small).message


def test_limits_from_the_environment() -> None:
    limits = JsonLimits.from_env({"METIS_MAX_JSON_DEPTH": "5", "METIS_MAX_JSON_INT": "1_000"})
    assert limits == JsonLimits(max_depth=5, max_int=1000)
    assert JsonLimits.from_env({}) == JsonLimits()
    for bad in ("0", "-3", "nan", "1e3", "ten"):
        with pytest.raises(InputError, match=r"METIS_MAX_JSON_DEPTH=.*positive integer"):
            JsonLimits.from_env({"METIS_MAX_JSON_DEPTH": bad})


def test_what_is_strict_json_still_decodes() -> None:
    text = (
        '{"i": 9223372036854775807, "f": 1.5e300, "tiny": 5e-324, "neg": -0.0,'
        ' "s": "12345678901234567890123", "e": "\\ud83d\\ude00", "lone": "\\udc80",'
        ' "u": "\u2028", "deep": ' + "[" * 99 + "]" * 99 + "}"
    )
    assert decode_json(text) == json.loads(text)


_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63) + 1, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON, st.booleans())
def test_valid_json_means_what_json_loads_means(value: Any, pretty: bool) -> None:
    text = json.dumps(value, indent=1 if pretty else None, ensure_ascii=False)
    assert decode_json(text) == json.loads(text)


@given(
    _JSON,
    st.integers(0, 10_000),
    st.sampled_from(["NaN", "1e999", "[" * 120, '"', "]", ",", "1" * 30]),
)
def test_any_damage_is_an_input_error_or_a_value(value: Any, where: int, damage: str) -> None:
    text = json.dumps(value)
    at = where % (len(text) + 1)
    damaged = text[:at] + damage + text[at:]
    try:
        got = decode_json(damaged)
    except InputError as exc:
        assert exc.line == 1 and "\n" not in str(exc)
        return
    check_json_value(got)  # what decodes is within every limit


def test_check_json_value_applies_the_same_limits() -> None:
    check_json_value({"a": [1, 2.5, "x", None, True]})
    for value, message in [
        ({"t": math.nan}, "t: NaN and Infinity are not JSON numbers"),
        ({"a": [{"n": 2**64}]}, "a[0].n: integer beyond the limit"),
        ({1: "x"}, "key 1 is not text"),
        ([[[[]]]], "[0][0][0]: nested deeper than 3 levels"),
    ]:
        with pytest.raises(InputError) as info:
            check_json_value(value, source="s.yaml", limits=JsonLimits(max_depth=3))
        assert info.value.message.startswith(message), info.value.message
