"""AUTH-4 on the plan path (issue 23): a plan segment's trace header records
the settings its gate read (`meta.permissions`, as `metis run` records them),
so `metis conform` derives each decision's facts from them. A real plan turn
whose `read` step a deny rule refuses conforms, and AUTH-4 is exercised; the
same trace edited as a gate that forgot one of the two deny rules would have
written it (the rule gone from the facts; the decision still a deny, by the
other rule, so PERM-1 and the turn log agree) is rejected with AUTH-4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metis_runtime.permissions import Policy
from metis_trace import Source

from ._runtime import conform
from ._runtime import proposing
from ._runtime import run
from ._runtime import runtime
from ._runtime import seed

RULE = "Read(notes/2025-01-06-standup.md)"
OTHER = "Read(notes/**)"
PLAN = {
    "steps": [
        {"tool": "read", "args": {"path": "notes/2025-01-06-standup.md"}},
        {"tool": "final_answer"},
    ]
}


def _turn(tmp_path: Path) -> Path:
    seed(tmp_path)
    settings = tmp_path / "ci.json"
    settings.write_text(json.dumps({"permissions": {"deny": [RULE, OTHER]}}))
    policy = Policy()
    policy.load(settings, Source.CLI)
    run(runtime(tmp_path, proposing(PLAN), policy), request="Read the standup note")
    (trace,) = (tmp_path / ".metis" / "plan" / "turns").glob("*/trace-*.jsonl")
    return trace


def test_a_plan_trace_records_its_settings_and_auth_4_is_exercised(tmp_path: Path) -> None:
    trace = _turn(tmp_path)
    header = json.loads(trace.read_text().splitlines()[0])
    rules = header["meta"]["permissions"]["rules"]
    assert [(r["pattern"], r["behavior"]) for r in rules] == [(RULE, "deny"), (OTHER, "deny")]
    report = conform(tmp_path)
    assert report.ok, report.first
    assert report.checks.get("AUTH-4", 0) >= 1


@pytest.mark.metis_nonconforming
def test_a_plan_trace_of_a_gate_that_forgot_the_deny_rule_is_auth_4(tmp_path: Path) -> None:
    trace = _turn(tmp_path)
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    (decision,) = [r for r in records if r.get("kind") == "decision"]
    assert decision["decision"] == "deny"
    kept = [r for r in decision["facts"]["rules"] if r["pattern"] != RULE]
    assert [r["pattern"] for r in kept] == [OTHER]
    # A gate that forgot RULE: the other deny rule still decides.
    decision["facts"]["rules"], decision["rule"] = kept, kept[0]
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = conform(tmp_path)
    assert not report.ok
    assert report.first is not None and report.first.invariant == "AUTH-4", report.first
    assert RULE in report.first.message
