"""TRACE-2: no file a run writes holds a credential, checked on real runs.

`metis conform RUN_DIR` (and a trace file) scans the files the run wrote:
the trace, the journal, the agent tree's files, offloads, and `--progress`
captures; `--canaries` adds the exact values a workload planted. A finding
names the file, line and family, never the value.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_run_files
from metis_check import scan_text
from metis_cli._run_files import run_files
from metis_runtime import Journal
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime._redact import Redactor
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_trace import Mode
from tests._credentials import DOCUMENTED
from tests._credentials import credentials
from tests._credentials import embedded
from tests._metis_cli import metis as _metis
from tests.runtime.test_loop_support import make_loop

AWS_KEY = DOCUMENTED[0][0].text  # AWS's documented example key id
CANARY = "metis-canary-7f3a9be10c"  # no detector pattern matches it


class _Verbatim(Redactor):
    """A redactor that redacts nothing: a runtime with this bug leaks."""

    def json_bytes(self, obj):  # type: ignore[no-untyped-def]
        return json.dumps(obj, separators=(",", ":")).encode()


def _run_reading_a_secret(tmp: Path, redactor: Redactor | None) -> Path:
    """One run: `read` a workspace file that holds a credential and a canary."""
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "config.env").write_text(f"AWS_ACCESS_KEY_ID={AWS_KEY}\nnote={CANARY}\n")
    run = tmp / "run"
    trace_path = run / "trace.jsonl"
    header = make_header(mode=Mode.BYPASS, tools=("read",))

    def script(request, turn):  # type: ignore[no-untyped-def]
        if turn == 0:
            return [ToolUseBlock("c1", "read", {"path": "config.env"})]
        return [TextBlock("read it")]

    trace = TraceWriter(trace_path, header, redactor=redactor)
    journal = Journal.create(
        trace_path.with_name("trace.jsonl.journal"), header.run_id, {}, redactor=redactor
    )
    loop = make_loop(script, ws, trace_path, trace=trace, journal=journal)
    asyncio.run(loop.run("read the config"))
    trace.close()
    journal.close()
    return run


def test_a_run_that_read_a_credential_left_none_in_its_files(tmp_path: Path) -> None:
    run = _run_reading_a_secret(tmp_path, None)
    canaries = tmp_path / "canaries.json"
    canaries.write_text(json.dumps([CANARY]))
    # The canary is not a credential: the redactor keeps it, and --canaries finds it.
    assert _metis("conform", str(run), cwd=tmp_path).returncode == 0
    r = _metis("conform", str(run), "--canaries", str(canaries), cwd=tmp_path)
    assert r.returncode == 1, r.stdout
    assert "TRACE-2" in r.stdout and "planted canary #1" in r.stdout
    assert CANARY not in r.stdout + r.stderr and AWS_KEY not in r.stdout


@pytest.mark.metis_nonconforming  # it leaks on purpose: the plugin's own scan would fail it
def test_a_runtime_that_does_not_redact_is_caught(tmp_path: Path) -> None:
    run = _run_reading_a_secret(tmp_path, _Verbatim())
    r = _metis("conform", str(run), "--json", cwd=tmp_path)
    assert r.returncode == 1, r.stdout
    report = json.loads(r.stdout)
    found = [v for v in report["violations"] if v["invariant"] == "TRACE-2"]
    assert {Path(v["message"].split(":")[0]).name for v in found} == {
        "trace.jsonl",
        "trace.jsonl.journal",
    }
    assert all("aws-access-key-id credential" in v["message"] for v in found)
    assert AWS_KEY not in r.stdout  # the report names the place, never the value
    assert report["checks"]["TRACE-2"] == 2


def test_the_files_of_a_run_and_not_its_workspaces(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for rel in (
        "trace.jsonl",
        "trace.jsonl.journal",
        "guard.json",
        "offload/1.0.txt",
        "agents/a1/config.json",
        "agents/a1/result.json",
        "agents/a1/trace.jsonl",
        "worktrees/a1/src/secret.py",
    ):
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text("x\n")
    names = {str(p.relative_to(run)) for p in run_files(run)}
    assert "worktrees/a1/src/secret.py" not in names and len(names) == 7
    beside = tmp_path / "solo.jsonl"
    beside.write_text("x\n")
    (tmp_path / "solo.jsonl.journal").write_text("x\n")
    (tmp_path / "solo.jsonl.agents" / "offload").mkdir(parents=True)
    (tmp_path / "solo.jsonl.agents" / "offload" / "o.txt").write_text("x\n")
    (tmp_path / "unrelated.txt").write_text("x\n")
    got = {p.name for p in run_files(beside)}
    assert got == {"solo.jsonl", "solo.jsonl.journal", "o.txt"}


def test_progress_output_is_scanned_too(tmp_path: Path) -> None:
    run = _run_reading_a_secret(tmp_path, None)
    progress = tmp_path / "stderr.txt"
    progress.write_text(f"1.0 read config.env: ok\nAWS_ACCESS_KEY_ID={AWS_KEY}\n")
    r = _metis("conform", str(run), "--progress", str(progress), cwd=tmp_path)
    assert r.returncode == 1 and "stderr.txt: line 2" in r.stdout, r.stdout


def test_bad_canaries_are_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text('["ok", 3]')
    run = _run_reading_a_secret(tmp_path, None)
    r = _metis("conform", str(run), "--canaries", str(bad), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "c.json" in r.stderr


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_every_family_embedded_any_way_is_found_and_never_echoed(data: st.DataObject) -> None:
    cred = data.draw(credentials())
    text = data.draw(embedded(cred))
    found = scan_text("f.jsonl", text)
    assert found, (cred.family, text)
    assert all(v.invariant == "TRACE-2" and cred.secret not in v.message for v in found)


@settings(max_examples=40, deadline=None)
@given(canary=st.text(st.characters(codec="utf-8"), min_size=6, max_size=30), pad=st.text())
def test_a_planted_canary_is_found_as_is_and_json_escaped(canary: str, pad: str) -> None:
    for written in (pad + canary + pad, json.dumps({"content": pad + canary})):
        report = check_run_files([("out.txt", written)], [canary])
        assert any("planted canary #1" in v.message for v in report.violations), written
    assert check_run_files([("out.txt", pad)], [canary + "\x00never"]).ok or canary in pad
