"""Traces are read strictly: JSON's types as the schema says, no coercion,
and `metis conform` turns every problem into one line naming file, line and
field (exit 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from metis_check import simulate
from metis_trace import TraceFormatError
from metis_trace import dumps_trace
from metis_trace import read_trace

from ._cli import run_metis


def _trace_lines() -> list[str]:
    return dumps_trace(*simulate(3)).splitlines()


def _with_event(line: int, change: dict[str, object]) -> list[str]:
    lines = _trace_lines()
    obj = json.loads(lines[line - 1])
    obj.update(change)
    lines[line - 1] = json.dumps(obj)
    return lines


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seq": "1"}, "seq: Input should be a valid integer (got '1')"),
        ({"seq": True}, "seq: Input should be a valid integer (got True)"),
        ({"seq": 1.0}, "seq: Input should be a valid integer (got 1.0)"),
        ({"t": "0.5"}, "t: Input should be a valid number (got '0.5')"),
        ({"causes": {"0": 1}}, "causes: Input should be a valid array"),
        ({"turn": None}, "turn: Input should be a valid integer (got None)"),
    ],
)
def test_wrong_json_types_are_not_coerced(change: dict[str, object], message: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        read_trace(_with_event(2, change))
    assert info.value.line == 2
    assert info.value.message.endswith(message), info.value.message


def test_a_nan_time_cannot_hide_a_time_going_backwards() -> None:
    lines = _trace_lines()
    lines[3] = lines[3].replace('"t":', '"t":NaN,"x":', 1)
    with pytest.raises(TraceFormatError) as info:
        read_trace(lines)
    assert str(info.value) == "line 4: t: NaN is not a JSON number"


def test_a_repeated_field_is_refused() -> None:
    lines = _trace_lines()
    lines[2] = lines[2].replace('{"seq":', '{"t":99.0,"seq":', 1)
    with pytest.raises(TraceFormatError, match="line 3: t: duplicate key 't'"):
        read_trace(lines)


def test_enum_strings_and_arrays_for_tuples_are_what_strict_json_means() -> None:
    header, events = read_trace(_trace_lines())
    assert events and header.tools and isinstance(header.tools, tuple)


def _conform(path: Path, *more: str) -> tuple[int, list[str]]:
    outcome = run_metis(["conform", str(path), *more])
    assert "Traceback" not in outcome.stderr + outcome.stdout
    return outcome.code, outcome.error_lines


def test_conform_on_hostile_files_is_one_line_and_exit_2(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    deep = tmp_path / "deep.jsonl"
    deep.write_text("\n".join([_trace_lines()[0], "[" * 100_000 + "]" * 100_000]))
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join([_trace_lines()[0], '{"seq": ' + "9" * 5000 + "}"]))
    typed = tmp_path / "typed.jsonl"
    typed.write_text("\n".join(_with_event(2, {"seq": "0"})))
    cases = {
        fifo: "not a regular file (a FIFO)",
        link: "not a regular file (a character device)",
        tmp_path / "missing.jsonl": "cannot read (No such file or directory)",
        deep: "line 2: [0][0][0]",
        big: "line 2: seq: integer beyond the limit",
        typed: "line 2: turn_start.seq: Input should be a valid integer (got '0')",
    }
    for path, message in cases.items():
        code, errors = _conform(path)
        assert code == 2, path
        assert len(errors) == 1, errors
        assert errors[0].startswith(f"metis: error: {path}: "), errors
        assert message in errors[0], errors


def test_conform_on_a_transcript_is_read_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text('{"type": "user", "uuid": "u1", "message": {"content": "hi"}, "n": NaN}\n')
    code, errors = _conform(path, "--format", "claude-code")
    assert code == 2
    assert errors == [f"metis: error: {path}: line 1: n: NaN is not a JSON number"]
    api = tmp_path / "request.json"
    api.write_text(
        '{\n  "messages": [\n    {"role": "user", "content": "x", "role": "user"}\n  ]\n}'
    )
    code, errors = _conform(api, "--format", "anthropic")
    assert code == 2
    assert errors == [f"metis: error: {api}: line 3: duplicate key 'role'"]
