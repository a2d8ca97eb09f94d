"""Plan turns through the real runtime: the gate, the four-class dispatcher,
manifest executors as subprocesses, SQLite, dialogs on disk. Every turn's log
and traces are checked against the model (`metis conform`'s checker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metis_runtime import ConfigError
from metis_runtime.permissions import Policy
from metis_runtime.plan import Coordinates
from metis_runtime.plan import PlanStore
from metis_runtime.plan import sign_manifest
from metis_runtime.tools import atomic_write
from metis_trace import ErrorClass
from metis_trace import MissReason
from metis_trace import ProbeOutcome
from metis_trace import ResumeAnswer
from metis_trace import StepStatus

from ._runtime import ALICE
from ._runtime import REQUEST
from ._runtime import conform
from ._runtime import kinds
from ._runtime import proposing
from ._runtime import records
from ._runtime import replay
from ._runtime import resume
from ._runtime import run
from ._runtime import runtime
from ._runtime import seed

PLAN: dict[str, Any] = {
    "steps": [
        {"tool": "find_notes", "args": {"folder": "notes"}},
        {"tool": "read_notes", "args": {"from_step": 1}},
        {"tool": "create_summary", "args": {"from_step": 2, "path": "Reports/notes-summary.md"}},
        {"tool": "final_answer", "args": {}},
    ]
}


def _resign(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))
    import yaml

    _, data = sign_manifest(path)
    atomic_write(path, yaml.safe_dump(data, sort_keys=False).encode())


def test_planned_paused_resumed_then_l0_then_a_miss_after_a_manifest_change(tmp_path: Path) -> None:
    seed(tmp_path)
    first = run(runtime(tmp_path, replay()))
    assert (first.state, first.path) == ("paused", "engine")
    assert not (tmp_path / "Reports" / "notes-summary.md").exists()  # nothing before consent
    done = resume(runtime(tmp_path, None), first)
    assert done.state == "completed"
    assert "Wrote Reports/notes-summary.md: 3 notes summarized." in done.answer
    assert (tmp_path / "Reports" / "notes-summary.md").read_text().startswith("# Notes summary")
    resumed = kinds(done, "resume")[0]
    assert resumed.done == (1, 2) and resumed.committed == ()  # rebuilt, not run again

    again = run(runtime(tmp_path, None))  # no provider: only the cache can serve it
    assert (again.state, again.path) == ("paused", "L0")  # consent is asked again
    assert resume(runtime(tmp_path, None), again).state == "completed"

    _resign(tmp_path / ".metis/executors/read_notes.yaml", "version: 1", "version: 2")
    third = run(runtime(tmp_path, replay(1)))
    probes = [(p.path.value, p.outcome, p.reason) for p in kinds(third, "path")]
    assert probes[0] == ("L0", ProbeOutcome.MISS, MissReason.EXECUTOR_CHANGED)
    assert (third.state, third.path) == ("paused", "engine")
    assert resume(runtime(tmp_path, None), third).state == "completed"
    report = conform(tmp_path)
    assert report.ok, report.first
    assert {"PLAN-1", "PLAN-6", "PLAN-7", "PLAN-9", "PLAN-11"} <= {
        k for k, n in report.checks.items() if n
    }


def test_an_approval_does_not_cover_a_changed_executor(tmp_path: Path) -> None:
    seed(tmp_path)
    paused = run(runtime(tmp_path, replay()))
    _resign(tmp_path / ".metis/executors/create_summary.yaml", "version: 1", "version: 7")
    again = resume(runtime(tmp_path, None), paused)
    assert again.state == "paused" and again.dialog != paused.dialog  # asked anew
    assert not (tmp_path / "Reports" / "notes-summary.md").exists()
    assert conform(tmp_path).ok


def test_only_the_owner_may_answer_and_a_rejection_runs_nothing(tmp_path: Path) -> None:
    seed(tmp_path)
    paused = run(runtime(tmp_path, replay()))
    with pytest.raises(ConfigError, match="belongs to alice"):
        resume(runtime(tmp_path, None), paused, who=Coordinates("bob", "bob", "cli", "default"))
    rejected = resume(runtime(tmp_path, None), paused, ResumeAnswer.REJECT)
    assert rejected.state == "rejected"
    assert not (tmp_path / "Reports" / "notes-summary.md").exists()
    with pytest.raises(ConfigError, match="not waiting"):
        resume(runtime(tmp_path, None), paused)
    assert conform(tmp_path).ok


def test_a_mutation_on_an_empty_collection_is_skipped_not_reported_done(tmp_path: Path) -> None:
    seed(tmp_path, skip=("notes/",))
    (tmp_path / "notes").mkdir()
    out = run(runtime(tmp_path, proposing(PLAN)))
    assert out.state == "completed"
    steps = {s.index: s for s in kinds(out, "step")}
    assert steps[3].status is StepStatus.SKIPPED_EMPTY and not steps[3].committed
    final = kinds(out, "final")[0]
    assert 3 not in final.claims and final.effects.committed == 0
    assert not (tmp_path / "Reports").exists()
    assert conform(tmp_path).ok


def test_a_missing_filler_pauses_for_input(tmp_path: Path) -> None:
    seed(tmp_path)
    plan = {**PLAN, "fillers": {"title": {"prompt": "A title"}}}
    plan["steps"] = [dict(s) for s in PLAN["steps"]]
    plan["steps"][2] = {
        **plan["steps"][2],
        "args": {**plan["steps"][2]["args"], "title": "${FILLER:title}"},
    }
    paused = run(runtime(tmp_path, proposing(plan)))
    assert paused.state == "paused" and "--input title=VALUE" in paused.answer
    asked = resume(runtime(tmp_path, None), paused, ResumeAnswer.INPUT, {"title": "Week 2"})
    assert asked.state == "paused"  # now the consent for the write
    assert resume(runtime(tmp_path, None), asked).state == "completed"
    assert (tmp_path / "Reports" / "notes-summary.md").read_text().startswith("# Week 2")
    assert conform(tmp_path).ok


def test_one_recovery_after_a_structural_failure(tmp_path: Path) -> None:
    seed(tmp_path)
    wrong = {"steps": [{"tool": "find_everything", "args": {}}, {"tool": "final_answer"}]}
    out = run(runtime(tmp_path, proposing(wrong, PLAN)), mode="acceptEdits")
    assert out.state == "completed", out.answer
    assert [r.kind for r in records(out)].count("recovery") == 1
    frames = kinds(out, "framework")
    assert [(f.attempt, f.valid) for f in frames] == [(0, False), (1, True)]
    assert conform(tmp_path).ok


def test_nothing_is_retried_after_a_commit(tmp_path: Path) -> None:
    seed(tmp_path)
    plan = {
        "steps": [
            {"tool": "write", "args": {"path": "Reports/first.md", "content": "one"}},
            {"tool": "read", "args": {"path": "Reports/missing.md"}},
            {"tool": "final_answer"},
        ]
    }
    out = run(
        runtime(tmp_path, proposing(plan)),
        request="Write one to Reports/first.md",
        mode="acceptEdits",
    )
    assert out.state == "failed" and "nothing was retried" in out.answer
    assert not kinds(out, "recovery")
    assert (tmp_path / "Reports" / "first.md").read_text() == "one"
    assert conform(tmp_path).ok


def _manifest(folder: Path, name: str, program: str, **fields: Any) -> None:
    import yaml

    (folder / f"{name}.py").write_text(program)
    data = {
        "name": name,
        "description": name,
        "effect": "read_only",
        "family": f"test.{name}",
        "produces": "collection",
        "program": f"{name}.py",
        "args": {"type": "object", "properties": {"album": {"type": "string"}}},
        **fields,
    }
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    _, signed = sign_manifest(folder / f"{name}.yaml")
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(signed))


def test_an_operational_failure_is_not_recovered(tmp_path: Path) -> None:
    seed(tmp_path)
    _manifest(
        tmp_path / ".metis" / "executors",
        "fetch_mail",
        'import json; print(json.dumps({"error": {"class": "operational", "reason": "unavailable", '
        '"message": "the mail server is down"}}))\n',
    )
    plan = {"steps": [{"tool": "fetch_mail", "args": {}}, {"tool": "final_answer"}]}
    out = run(runtime(tmp_path, proposing(plan, plan)))
    steps = kinds(out, "step")
    assert (
        steps[0].error_class is ErrorClass.OPERATIONAL and "mail server is down" in steps[0].error
    )
    assert out.state == "failed" and not kinds(out, "recovery")
    assert conform(tmp_path).ok


def test_a_path_from_another_host_does_not_become_local(tmp_path: Path) -> None:
    seed(tmp_path)
    _manifest(
        tmp_path / ".metis" / "executors",
        "phone_photos",
        'import json; print(json.dumps(["/sdcard/DCIM/1.jpg"]))\n',
        host="phone",
    )
    plan = {
        "steps": [
            {"tool": "phone_photos", "args": {"album": "camera"}},
            {"tool": "read_notes", "args": {"from_step": 1}},
            {"tool": "final_answer"},
        ]
    }
    out = run(runtime(tmp_path, proposing(plan, plan)))
    refused = [s for s in kinds(out, "step") if s.status is StepStatus.REFUSED]
    assert (
        refused
        and refused[0].error_class is ErrorClass.OUT_OF_SCOPE
        and "phone" in refused[0].error
    )
    assert out.state == "failed"
    assert conform(tmp_path).ok


def test_undo_restores_what_the_last_turn_changed(tmp_path: Path) -> None:
    seed(tmp_path)
    out = run(runtime(tmp_path, proposing(PLAN)), mode="acceptEdits")
    assert out.state == "completed" and (tmp_path / "Reports" / "notes-summary.md").exists()
    undo = run(runtime(tmp_path, None), request="undo last turn")
    assert (undo.state, undo.path) == ("paused", "route")  # an edit: asked about in default mode
    assert resume(runtime(tmp_path, None), undo).state == "completed"
    assert not (tmp_path / "Reports" / "notes-summary.md").exists()
    assert conform(tmp_path).ok


def test_a_recurrence_is_recorded_not_run_and_an_ambiguous_one_is_refused(tmp_path: Path) -> None:
    seed(tmp_path)
    out = run(runtime(tmp_path, None), request=f"every 30m {REQUEST}")
    assert out.state == "completed" and "Recorded task" in out.answer
    vague = run(runtime(tmp_path, None), request=f"every day {REQUEST}")
    assert vague.state == "refused" and "missing the time of day" in vague.answer
    with PlanStore(tmp_path) as store:
        (task,) = store.tasks()
    assert (task.owner, task.schedule, task.command) == ("alice", "every 30m", REQUEST)
    assert not (tmp_path / "Reports").exists()
    assert conform(tmp_path).ok


def test_a_deny_rule_denies_a_step_and_ends_the_turn(tmp_path: Path) -> None:
    from metis_trace import RuleBehavior
    from metis_trace import Source

    seed(tmp_path)
    policy = Policy()
    policy.add(Source.CLI, RuleBehavior.DENY, "create_summary", origin="test")
    out = run(runtime(tmp_path, proposing(PLAN), policy), mode="acceptEdits")
    steps = {s.index: s for s in kinds(out, "step")}
    assert steps[3].status is StepStatus.DENIED and out.state == "failed"
    assert conform(tmp_path).ok


def test_a_refused_manifest_is_not_in_the_catalog(tmp_path: Path) -> None:
    seed(tmp_path)
    path = tmp_path / ".metis/executors/read_notes.yaml"
    path.write_text(path.read_text().replace("version: 1", "version: 3"))  # not re-signed
    rt = runtime(tmp_path, None)
    catalog = rt.catalog()
    assert "read_notes" not in catalog and "find_notes" in catalog
    assert any("digest: does not match" in p and "read_notes.yaml" in p for p in catalog.problems)
    assert ALICE.owner == "alice"


def test_schedules(tmp_path: Path) -> None:
    import datetime as dt

    from metis_runtime.plan import parse_schedule

    assert parse_schedule("daily@8:05").text == "daily@08:05"
    every = parse_schedule("every 30m")
    start = dt.datetime(2025, 1, 1, 7, 50)
    assert every.next_after(start) == dt.datetime(2025, 1, 1, 8, 20)
    assert parse_schedule("daily@08:00").next_after(start) == dt.datetime(2025, 1, 1, 8, 0)
    for text, missing in [
        ("daily", "missing the time of day"),
        ("daily@8", "missing the minutes"),
        ("daily@25:00", "not a time of day"),
        ("every", "missing the interval"),
        ("every 30", "missing the unit"),
        ("every 0m", "the interval must be"),
        ("weekly@mon", "not a recognized recurrence"),
    ]:
        with pytest.raises(ConfigError, match=missing):
            parse_schedule(text)


def test_a_credential_in_an_input_or_a_literal_is_redacted_in_every_log(tmp_path: Path) -> None:
    # Metnos section 11: recognized credentials are redacted before persistence.
    # One typed as a filler's value on resume, one written into the plan.
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
    literal = "sk-ant-api03-" + "x7" * 40
    seed(tmp_path)
    plan = {**PLAN, "fillers": {"title": {"prompt": "A title"}}}
    plan["steps"] = [dict(s) for s in PLAN["steps"]]
    title = f"${{FILLER:title}} {literal}"
    plan["steps"][2] = {**plan["steps"][2], "args": {**plan["steps"][2]["args"], "title": title}}
    paused = run(runtime(tmp_path, proposing(plan)))
    asked = resume(
        runtime(tmp_path, None), paused, ResumeAnswer.INPUT, {"title": f"Deploy {secret}"}
    )
    assert resume(runtime(tmp_path, None), asked).state == "completed"
    logs = list((tmp_path / ".metis" / "plan").rglob("*.jsonl"))
    assert (
        any("/turns/" in str(p) for p in logs) and len(logs) >= 4
    )  # the turn log and 3 segment traces
    for path in logs:
        text = path.read_text()
        assert secret not in text and literal not in text, path
    assert "[REDACTED]" in next(p for p in logs if p.parent.name == "turns").read_text()
    assert conform(tmp_path).ok
