"""The fault matrix (`metis_studies.faults`): one test per row and dispatcher,
checks that each fault happened as described, that the matrix can fail, and
the `faults` command through click's CliRunner."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import metis_studies.faults._matrix as faults_module
from metis_cli._faults import HEADERS
from metis_cli._faults import faults
from metis_runtime import StreamFormatError
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import BlockFinished
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import parse_sse
from metis_runtime.tools import BashTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import _bash as bash_module
from metis_studies.faults import DISPATCHERS
from metis_studies.faults import FAULTS
from metis_studies.faults import FaultRow
from metis_studies.faults import closure_of
from metis_studies.faults import cut_stream_cassette
from metis_studies.faults import run_fault
from metis_trace import TraceEvent
from metis_trace import parse_event
from metis_trace import read_trace

ROWS = [(name, d) for name in FAULTS for d in DISPATCHERS]


def _explain(row: FaultRow) -> str:
    return "\n".join(f"{k}: {v}" for k, v in row.to_json().items())


@pytest.mark.parametrize(("name", "dispatcher"), ROWS, ids=[f"{n}-{d}" for n, d in ROWS])
def test_fault_row_holds(name: str, dispatcher: str, tmp_path: Path) -> None:
    row = run_fault(name, tmp_path, dispatcher)
    assert row.trace_conforms, _explain(row)
    assert row.one_to_one, _explain(row)
    assert row.observed_closure == row.expected_closure, _explain(row)
    assert row.observed_effects == row.expected_effects, _explain(row)
    assert row.holds


# --- each fault happened as the row says ------------------------------------------------------


def _events(tmp_path: Path, name: str) -> list[TraceEvent]:
    with (tmp_path / name / "trace.jsonl").open(encoding="utf-8") as fh:
        return read_trace(fh)[1]


def _of(events: Sequence[TraceEvent], kind: str) -> list[Any]:
    return [e for e in events if e.kind == kind]


def _content(events: Sequence[TraceEvent], occ: str) -> str:
    return str(next(e.content for e in _of(events, "result") if e.occ == occ))


def test_the_cut_stream_ends_inside_the_second_tool_use() -> None:
    body = cut_stream_cassette().interactions[0].body
    normalizer = AnthropicNormalizer()
    seen = []
    with pytest.raises(StreamFormatError, match=r"truncated.*still open: tool_use block 1"):
        for sse in parse_sse(body):
            seen.extend(normalizer.feed_sse(sse))
        normalizer.finish()
    finished: list[object] = [e.block for e in seen if isinstance(e, BlockFinished)]
    assert finished == [ToolUseBlock("toolu_whole", "bash", {"command": "echo a >> log.txt"})]


def test_a_cut_stream_records_no_call_and_runs_none(tmp_path: Path) -> None:
    run_fault("stream-cut", tmp_path)
    events = _events(tmp_path, "stream-cut")
    assert [e.kind for e in events] == ["turn_start", "request", "interrupt", "run_end"]
    assert "truncated" in _of(events, "interrupt")[0].reason


def test_a_hung_call_is_killed_at_its_timeout(tmp_path: Path) -> None:
    run_fault("hangs", tmp_path)
    assert "[timed out after 0.5s; process group killed]" in _content(
        _events(tmp_path, "hangs"), "1.0"
    )


def test_the_raising_tool_is_an_error_that_names_the_exception(tmp_path: Path) -> None:
    run_fault("raises", tmp_path)
    content = _content(_events(tmp_path, "raises"), "1.1")
    assert content == "RuntimeError: injected fault: the tool crashed"


def test_the_denied_call_never_starts_and_names_its_rule(tmp_path: Path) -> None:
    run_fault("denial", tmp_path)
    events = _events(tmp_path, "denial")
    decision = next(e for e in _of(events, "decision") if e.occ == "1.1")
    assert (decision.decision.value, decision.stage, decision.rule.pattern) == (
        "deny",
        "deny_rule",
        "Bash(rm:*)",
    )
    assert [e.occ for e in _of(events, "effect_start")] == ["1.0", "1.2"]
    # AUTH-2: every call of the batch is decided before the first effect.
    kinds = [e.kind for e in events]
    assert kinds.index("effect_start") > max(i for i, k in enumerate(kinds) if k == "decision")


def test_malformed_calls_are_decided_but_never_started(tmp_path: Path) -> None:
    run_fault("malformed", tmp_path)
    events = _events(tmp_path, "malformed")
    assert [e.occ for e in _of(events, "decision")] == ["1.0", "1.1", "1.2", "1.3"]
    assert [e.occ for e in _of(events, "effect_start")] == ["1.3"]
    assert "not a JSON object" in _content(events, "1.0")
    assert "missing required field 'command'" in _content(events, "1.1")
    assert "unknown tool 'no_such_tool'" in _content(events, "1.2")


def test_duplicate_ids_are_closed_per_occurrence(tmp_path: Path) -> None:
    run_fault("duplicate-ids", tmp_path)
    results = _of(_events(tmp_path, "duplicate-ids"), "result")
    assert [(r.occ, r.call_id) for r in results] == [("1.0", "dup"), ("1.1", "dup"), ("2.0", "dup")]


@pytest.mark.parametrize(
    ("name", "stubbed"),
    [
        ("sigkill", ("1.1", "1.2")),
        ("sigkill-duplicate-ids", ("1.1", "1.2")),
        ("sigkill-background", ()),
    ],
)
def test_the_killed_process_left_the_run_for_resume(
    name: str, stubbed: tuple[str, ...], tmp_path: Path
) -> None:
    run_fault(name, tmp_path)
    events = _events(tmp_path, name)
    kinds = [e.kind for e in events]
    # The killed process wrote no interrupt: the resuming one records it.
    interrupt = _of(events, "interrupt")
    assert len(interrupt) == 1
    assert interrupt[0].reason == "the process stopped before the run ended"
    assert kinds.index("interrupt") < kinds.index("resume") < kinds.index("repair")
    repair = _of(events, "repair")[0]
    assert repair.stubbed == stubbed
    if stubbed:  # the slow call had started, and was not run again: its outcome is unknown
        assert [e.occ for e in _of(events, "effect_start")] == ["1.0", "1.1"]
        ends = [(e.occ, e.outcome.value) for e in _of(events, "effect_end")]
        assert ends == [("1.0", "ok"), ("1.1", "unknown")]
        assert repair.unknown == ("1.1",)
    else:
        assert [(e.occ, e.outcome.value) for e in _of(events, "job_done")] == [("1.0", "cancelled")]


def test_the_rolled_back_call_reports_its_failure(tmp_path: Path) -> None:
    run_fault("rollback", tmp_path)
    events = _events(tmp_path, "rollback")
    assert "injected fault: failed after writing 2 file(s)" in _content(events, "1.0")
    end = next(e for e in _of(events, "effect_end") if e.occ == "1.0")
    assert (end.outcome.value, end.committed) == ("error", False)


# --- the matrix can fail ---------------------------------------------------------------------


@pytest.mark.metis_nonconforming  # the doubled run's trace is broken on purpose
def test_a_duplicated_effect_and_result_fail_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import metis_runtime.dispatch._serial as serial

    real = serial.execute_call  # type: ignore[attr-defined]

    async def twice(call: Any, ctx: Any, sink: Any) -> None:
        await real(call, ctx, sink)
        await real(call, ctx, sink)

    monkeypatch.setattr(serial, "execute_call", twice)
    row = run_fault("raises", tmp_path)
    assert not row.holds
    assert row.observed_effects == "a=2 c=2"
    assert not row.one_to_one and "1.0 ok+ok" in row.observed_closure
    assert not row.trace_conforms and "re-executed" in row.note  # RETRY-1 speaks first


def test_closure_counts_stray_and_missing_results() -> None:
    header = {"kind": "header", "run_id": "r", "root_run_id": "r"}
    lines = [
        header,
        {"seq": 0, "t": 0, "kind": "turn_start", "turn": 1},
        {"seq": 1, "t": 0, "kind": "request", "turn": 1},
        {
            "seq": 2,
            "t": 0,
            "kind": "assistant",
            "turn": 1,
            "calls": [
                {"occ": "1.0", "call_id": "a", "tool": "bash"},
                {"occ": "1.1", "call_id": "b", "tool": "bash"},
            ],
        },
        {"seq": 3, "t": 0, "kind": "result", "occ": "1.0", "status": "ok"},
        {"seq": 4, "t": 0, "kind": "result", "occ": "9.9", "status": "ok"},
    ]
    events = [parse_event(line, i) for i, line in enumerate(lines[1:], 2)]
    text, one_to_one = closure_of(events)
    assert text == "1.0 ok, 1.1 none, 9.9 ok; run not ended"
    assert not one_to_one


def test_a_crashing_row_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(workdir: Path, dispatcher: str) -> FaultRow:
        raise OSError("disk full")

    monkeypatch.setitem(FAULTS, "boom", boom)
    row = run_fault("boom", tmp_path)
    assert not row.holds and row.observed_closure == "crashed: OSError: disk full"


# --- the command -----------------------------------------------------------------------------


def test_faults_command_json_every_row_holds() -> None:
    result = CliRunner().invoke(faults, ["--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == len(FAULTS)
    assert set(rows[0]) == {
        "case",
        "expected_closure",
        "expected_effects",
        "observed_closure",
        "observed_effects",
        "trace_conforms",
        "one_to_one",
        "note",
        "holds",
    }
    assert all(r["holds"] and r["trace_conforms"] and r["one_to_one"] for r in rows)


def test_faults_command_table_and_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(workdir: Path, dispatcher: str) -> FaultRow:
        return FaultRow("broken row", "1.0 ok", "a=1", "1.0 ok+ok", "a=2", False, False, "why")

    few = {"denial": FAULTS["denial"], "rollback": FAULTS["rollback"]}
    monkeypatch.setattr(faults_module, "FAULTS", few)
    held = CliRunner().invoke(
        faults, ["--workdir", str(tmp_path / "w"), "--dispatcher", "four-class"]
    )
    assert held.exit_code == 0, held.output
    first = held.output.splitlines()[0]
    assert all(h in first for h in HEADERS)
    assert "a denial in the middle of a batch" in held.output
    assert held.output.rstrip().endswith("2/2 rows hold")
    assert (tmp_path / "w" / "denial" / "trace.jsonl").is_file()  # kept where asked

    monkeypatch.setattr(faults_module, "FAULTS", {**few, "broken": broken})
    failed = CliRunner().invoke(faults, [])
    assert failed.exit_code == 1
    assert "broken row: why" in failed.output
    assert failed.output.rstrip().endswith("2/3 rows hold")


# --- a runtime bug the matrix exposed, fixed ------------------------------------------------------


def test_a_cancel_during_the_bash_spawn_kills_the_whole_group(tmp_path: Path) -> None:
    # Deterministic: the cancel comes from the protocol's connection_made, which
    # asyncio calls after the child started and before subprocess_exec returns,
    # once the command has forked its subshell.
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = ToolContext(ws, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, JobManager())
    # `b` is written after the subshell is forked: once it is there, so is the subshell.
    command = "(sleep 2; echo B >> log.txt) & echo b >> log.txt; wait"

    async def main() -> float:
        task = asyncio.ensure_future(BashTool().run({"command": command}, ctx))
        real = bash_module._Collector.connection_made

        def cancelling(self: Any, transport: Any) -> None:
            real(self, transport)
            deadline = time.monotonic() + 10
            log = ws / "log.txt"
            while not (log.exists() and "b" in log.read_text()) and time.monotonic() < deadline:
                time.sleep(0.005)  # blocking on purpose: still inside subprocess_exec
            task.cancel()

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(bash_module._Collector, "connection_made", cancelling)
            start = time.monotonic()
            await asyncio.wait((task,))
        took = time.monotonic() - start
        await asyncio.sleep(2.5)  # long enough for a surviving subshell to write B
        return took

    took = asyncio.run(main())
    log = (ws / "log.txt").read_text().split() if (ws / "log.txt").exists() else []
    assert "B" not in log, f"an effect after the cancel: {log}"
    # The leaked subshell would hold the pipe for its whole 2 s sleep: a cancel
    # that waited for it takes at least that long.
    assert took < 2.0, f"the cancel took {took:.1f}s"


@pytest.mark.parametrize("name", ["mcp-dies", "mcp-malformed"])
def test_a_row_holds_in_a_relative_folder(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `make demo` passes `--out demo-out/story`: the MCP rows' servers run in
    # another folder, and a relative path broke them (the row failed, exit 1).
    from metis_studies.faults import run_fault

    monkeypatch.chdir(tmp_path)
    row = run_fault(name, Path("relative"), "four-class")
    assert row.holds, (row.observed_closure, row.observed_effects)
