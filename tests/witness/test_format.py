"""The witness file format: the checked-in schema, the reader's errors, a torn last line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metis_trace import Change
from metis_trace import Ready
from metis_trace import TraceFormatError
from metis_trace import WitnessHeader
from metis_trace import WitnessSession
from metis_trace import iter_witness_lines
from metis_trace import read_witness
from metis_trace import witness_json_schema
from tests._metis_cli import ROOT
from tests._metis_cli import metis

HEADER = WitnessHeader(pid=1, t=1.0, boot_id="b")


def test_checked_in_witness_schema_has_not_drifted() -> None:
    checked_in = json.loads((ROOT / "specs" / "witness-schema.json").read_text())
    assert checked_in == json.loads(json.dumps(witness_json_schema())), "run `make schema`"


def test_sessions_round_trip_and_a_torn_last_line_is_dropped() -> None:
    change = Change(path="/ws/a", ops=("create", "close_write"), lo=1.5, hi=1.6)
    sessions = [WitnessSession(HEADER, 1, (Ready(t=1.2), change), (2, 3))]
    lines = list(iter_witness_lines(sessions))
    back = read_witness([*lines, '{"kind": "change", "pa'])
    assert back == sessions
    again = read_witness([*lines, HEADER.model_copy(update={"session": 1}).model_dump_json()])
    assert [s.header.session for s in again] == [0, 1] and again[1].header_line == 4


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "line 1: empty witness file"),
        (['{"kind": "ready", "t": 1}'], "line 1: first line must be the witness header"),
        (['{"kind": "header", "format": "metis-trace"}'], "line 1: format must be 'metis-witness'"),
        (
            ['{"kind": "header", "format": "metis-witness", "version": 9}'],
            "line 1: unsupported witness version 9",
        ),
        (
            [HEADER.model_dump_json(), '{"kind": "change", "path": "/a"}', "{}"],
            "line 2: change.ops: Field required",
        ),
        ([HEADER.model_dump_json(), "[1]", "{}"], "line 2: a witness line must be a JSON object"),
        ([HEADER.model_dump_json(), "nope", "{}"], "line 2: not valid JSON"),
        ([HEADER.model_dump_json(), '{"kind": "telepathy", "t": 1}'], "line 2: "),
    ],
)
def test_malformed_witness_files_are_refused_with_their_line(
    lines: list[str], message: str
) -> None:
    with pytest.raises(TraceFormatError) as err:
        read_witness(lines)
    assert str(err.value).startswith(message)


def test_conform_with_a_bad_witness_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"kind": "header", "format": "metis-trace", "version": 1, "run_id": "r", '
        '"root_run_id": "r"}\n'
    )
    bad = tmp_path / "w.jsonl"
    bad.write_text('{"kind": "header", "format": "metis-witness", "version": 1}\n')
    for args in (
        ["--witness", str(bad)],
        ["--witness", str(tmp_path / "missing")],
        ["--witness", str(bad), "--format", "anthropic"],
    ):
        done = metis("conform", str(trace), *args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
