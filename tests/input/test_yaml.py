"""YAML held to JSON's data model and limits, each problem at its line."""

from __future__ import annotations

import time

import pytest

from metis_runtime._yaml import MAX_EXPANDED_NODES
from metis_runtime._yaml import load_yaml
from metis_trace import InputError
from metis_trace import JsonLimits


def _error(text: str, **kw: int) -> InputError:
    with pytest.raises(InputError) as info:
        load_yaml(text, source="s.yaml", **kw)
    assert "\n" not in str(info.value)
    return info.value


def test_plain_documents_load() -> None:
    text = "a: 1\nb: [1, 2.5, {c: null}]\nd: true\ne: 'x'\nshared: &s {k: v}\nagain: *s\n"
    assert load_yaml(text, source="s.yaml") == {
        "a": 1,
        "b": [1, 2.5, {"c": None}],
        "d": True,
        "e": "x",
        "shared": {"k": "v"},
        "again": {"k": "v"},
    }
    assert load_yaml("", source="s.yaml") is None


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: 1\nt: .nan\n", 2, "t: .nan is not a JSON number"),
        ("x:\n  y: [1, -.inf]\n", 2, "x.y[1]: -.inf is not a JSON number"),
        ("n: " + "1" * 5000, 1, "n: integer beyond the limit of 9223372036854775807"),
        ("n: 0x" + "f" * 17, 1, "n: integer beyond the limit"),
        ("when: 2024-01-01\n", 1, "when: a YAML timestamp is not a JSON value (quote it"),
        ("s: !!set {a, b}\n", 1, "s: tag:yaml.org,2002:set is not a JSON value"),
        ("b: !!binary aGk=\n", 1, "b: a YAML binary is not a JSON value"),
        ("1: one\n", 1, "a key must be a string"),
        ("? [k]\n: v\n", 1, "a key must be a string"),
        ("loop: &a [*a]\n", 1, "loop[0]: an alias refers to a value that contains it"),
        ("a: [\n", 2, "not valid YAML: did not find expected node content"),
        ("a: b\n  c: d\n", 2, "not valid YAML: mapping values are not allowed"),
        ("[" * 101 + "]" * 101, 1, "nested deeper than 100 levels"),
        ("[" * 5000 + "]" * 5000, 1, "not valid YAML: exceeded maximum nesting depth"),
    ],
)
def test_rejected_at_its_line(text: str, line: int, message: str) -> None:
    err = _error(text)
    assert err.line == line
    assert message in err.message, err.message


def test_the_first_line_offsets_every_line() -> None:
    assert _error("a: 1\nb: .inf\n", first_line=2).line == 3  # front matter starts on line 2


def test_a_billion_laughs_is_refused_without_expanding_it() -> None:
    rows = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    started = time.monotonic()
    err = _error("\n".join(rows))
    assert f"aliases expand to more than {MAX_EXPANDED_NODES} values" in err.message
    assert err.line is not None and err.line <= 10
    assert time.monotonic() - started < 2


def test_limits_are_the_json_limits() -> None:
    small = JsonLimits(max_depth=2, max_int=10)
    assert load_yaml("a: [10]", source="s", limits=small) == {"a": [10]}
    assert "nested deeper than 2" in _error("a: [[1]]", limits=small).message  # type: ignore[arg-type]
    assert "limit of 10" in _error("a: -11", limits=small).message  # type: ignore[arg-type]
