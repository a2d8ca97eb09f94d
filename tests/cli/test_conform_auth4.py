"""AUTH-4 end to end (issue 23, "Done when"): a real `metis run` records its
gate's settings in the trace header, its decisions conform; a gate that
forgets a rule (patched into the runtime), a protected path or the scope
(the real trace edited as such a gate would have written it) is rejected by
`metis conform` with AUTH-4."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._main import cli


def _run(ws: Path, tmp_path: Path) -> Path:
    settings = tmp_path / "ci.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(README.md)"]}}))
    done = CliRunner().invoke(
        cli, ["run", "--workspace", str(ws), "--headless", "--json", "--settings", str(settings)]
    )
    assert done.exit_code in (0, 1), done.output
    return Path(json.loads(done.stdout)["trace"])


def _conform(trace: Path) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["conform", str(trace)])
    return done.exit_code, done.output


def _records(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


def test_a_real_run_records_its_gate_and_conforms(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    trace = _run(ws, tmp_path)
    header = _records(trace)[0]
    recorded = header["meta"]["permissions"]
    assert recorded["workspace"] == str(ws.resolve())
    rule = next(r for r in recorded["rules"] if r["pattern"] == "Read(README.md)")
    assert rule["behavior"] == "deny" and rule["source"] == "cli"
    assert rule["origin"].endswith("ci.json: permissions.deny[0]")
    code, out = _conform(trace)
    assert code == 0, out


@pytest.mark.metis_nonconforming
def test_a_gate_that_forgets_a_rule_is_rejected_with_auth_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setattr("metis_runtime.permissions._gate.path_matches", lambda *a, **k: False)
    trace = _run(ws, tmp_path)
    code, out = _conform(trace)
    assert code == 1 and "AUTH-4" in out and "Read(README.md)" in out, out


def _edit_call(trace: Path, tool: str, path: str, footprint: str) -> Path:
    """The trace as a gate that ignored the path's facts would write it: the
    first `tool` call names `path`, the tool resolved it to `footprint`, and
    the decision's facts are the ones the gate had (unchanged)."""
    records = _records(trace)
    occ = None
    for r in records:
        if r["kind"] == "assistant":
            for c in r["calls"]:
                if c["tool"] == tool and occ is None:
                    occ, c["input"]["path"] = c["occ"], path
    assert occ is not None
    for r in records:
        if r["kind"] == "decision" and r["occ"] == occ:
            field = "writes" if r["writes"] else "reads"
            r[field] = [footprint]
            if field == "writes" and r["cls"] == "queue":  # a Queue edit is keyed by its file
                r["key"] = f"file:{footprint}"
    out = trace.with_name("edited.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


@pytest.mark.parametrize(
    ("tool", "path", "below", "fact"),
    [
        ("write", ".git/config", True, "protected"),
        ("read", "/etc/hostname", False, "in_scope"),
        ("read", "config/.env", True, "secret"),
    ],
)
def test_a_gate_that_forgets_a_path_fact_is_rejected_with_auth_4(
    tmp_path: Path, tool: str, path: str, below: bool, fact: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    trace = _run(ws, tmp_path)
    footprint = str(ws.resolve() / path) if below else path
    code, out = _conform(_edit_call(trace, tool, path, footprint))
    assert code == 1 and "AUTH-4" in out and fact in out, out
