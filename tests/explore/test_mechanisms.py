"""The mechanisms' workloads (`metis_studies/explore/_mech*.py`): each runs for
real, conforms on the unpatched runtime and reaches every situation it names,
read back from what the run left; and each check of their own fails on the
bad case it is there for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metis_studies.explore import MECH_SWEEP
from metis_studies.explore import Case
from metis_studies.explore import _mech_agents
from metis_studies.explore import _mech_files
from metis_studies.explore import _mech_hook
from metis_studies.explore import _mech_mcp
from metis_studies.explore import _mech_settings
from metis_studies.explore import check_outcome
from metis_studies.explore import execute
from metis_studies.explore import situations
from metis_trace import Mode
from metis_trace import Spawn

SLOW = {"plan:turns", "hook:session", "agents:definition-tools", "agents:definition-mode"}
_RUNS: dict[str, tuple[Path, object]] = {}


def _run(case: Case, tmp: Path) -> object:
    workload = case.build()
    # A case that reads what only an in-process run keeps (the request bodies
    # as posted, `_wire.py`) says so; the others run as `metis run`.
    execution = "in-process" if case.runner is None and case.execution == "in-process" else None
    verdict = check_outcome(execute(workload, tmp / "run", execution or "metis-run"))
    assert verdict.ok, [f.one_line() for f in verdict.findings]
    reached = situations(verdict.traces, workload, verdict.outcome.paths.root)
    missing = [s for s in case.situations if not reached.get(s)]
    assert not missing, f"{case.focus}: never reached {missing} ({verdict.outcome.steps})"
    return verdict


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.focus, marks=[pytest.mark.slow] if c.focus in SLOW else [])
        for c in MECH_SWEEP
    ],
)
def test_each_mechanism_workload_conforms_and_reaches_its_situations(
    case: Case, tmp_path: Path
) -> None:
    _run(case, tmp_path)


def _case(focus: str) -> Case:
    return next(c for c in MECH_SWEEP if c.focus == focus)


def test_a_settings_file_missing_from_the_record_is_auth_4(tmp_path: Path) -> None:
    case = _case("settings:precedence")
    verdict = _run(case, tmp_path)
    traces = dict(verdict.traces)  # type: ignore[attr-defined]
    name, (header, events) = next((n, t) for n, t in traces.items() if t[0].depth == 0)
    meta = json.loads(json.dumps(header.meta))
    meta["settings"] = [f for f in meta["settings"] if "managed" not in f["path"]]
    meta["permissions"]["rules"] = [
        r for r in meta["permissions"]["rules"] if r["source"] != "policy"
    ]
    traces[name] = (header.model_copy(update={"meta": meta}), events)
    root = verdict.outcome.paths.root  # type: ignore[attr-defined]
    found = _mech_settings.check(case.build(), root, traces)
    assert {p[0] for p in found} == {"AUTH-4"} and len(found) == 2, found
    plan = _mech_settings.default_mode()
    mode_traces = {name: (header.model_copy(update={"mode": Mode.ACCEPT_EDITS}), events)}
    assert "PERM-4" in {p[0] for p in _mech_settings.check(plan, root, mode_traces)}


def test_a_child_surface_wider_than_its_definition_is_child_1() -> None:
    from metis_trace import TraceHeader

    header = TraceHeader(run_id="r", root_run_id="r")
    spawn = Spawn(
        seq=1,
        t=0.0,
        agent_id="reviewer-1a2b",
        child_mode=Mode.DEFAULT,
        child_tools=("read", "grep", "write"),
        parent_mode=Mode.DEFAULT,
        parent_tools=("read", "grep", "write"),
    )
    found = _mech_agents.check(_mech_agents.definition_tools(), Path("/"), {"t": (header, [spawn])})
    assert [p[0] for p in found] == ["CHILD-1"], found
    narrow = spawn.model_copy(update={"child_tools": ("grep", "read")})
    assert (
        _mech_agents.check(_mech_agents.definition_tools(), Path("/"), {"t": (header, [narrow])})
        == []
    )


def test_a_file_written_outside_the_workspace_is_auth_1(tmp_path: Path) -> None:
    workload = _mech_files.containment()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "vault.txt").write_text(workload.placed["outside/vault.txt"])
    assert _mech_files.check(workload, tmp_path, {}) == []
    (tmp_path / "outside" / "escape.txt").write_text("escaped\n")
    assert [p[0] for p in _mech_files.check(workload, tmp_path, {})] == ["AUTH-1"]


def test_a_denied_mcp_call_the_server_saw_is_auth_1(tmp_path: Path) -> None:
    case = _case("mcp:server")
    verdict = _run(case, tmp_path)
    root = verdict.outcome.paths.root  # type: ignore[attr-defined]
    traces = verdict.traces  # type: ignore[attr-defined]
    assert _mech_mcp.check(case.build(), root, traces) == []
    with (root / _mech_mcp.LOG).open("a") as fh:
        fh.write("reveal deploy\n")  # as if the denied call had reached the server
    assert [p[0] for p in _mech_mcp.check(case.build(), root, traces)] == ["AUTH-1"]


@pytest.mark.parametrize(
    ("index", "answer", "invariant"),
    [(0, None, "PERM-2"), (1, None, "PERM-1"), (4, None, "PERM-3"), (5, "allow", "PERM-4")],
)
def test_a_hook_answer_the_placed_settings_forbid_is_caught(
    index: int, answer: str | None, invariant: str, tmp_path: Path
) -> None:
    """The hook's outputs against the deriver over the placed settings: an
    answer of "no objection" (or allow) where the model admits only deny or
    ask is reported under the ID it breaks."""
    event, tool, inp, mode, tid = _mech_hook.PAYLOADS[index]
    payload = _mech_hook.payload(tmp_path, event, tool, inp, mode, tid)
    output = None if answer is None else {"hookSpecificOutput": {"permissionDecision": answer}}
    (tmp_path / "run").mkdir()
    trace = tmp_path / "ws" / ".metis" / "claude-code" / f"{_mech_hook.session_id(tmp_path)}.jsonl"
    trace.parent.mkdir(parents=True)
    trace.write_text("")
    (tmp_path / "run" / "hook-outputs.jsonl").write_text(
        json.dumps({"payload": payload, "output": output}) + "\n"
    )
    found = _mech_hook.check(_mech_hook.session(), tmp_path, {})
    assert invariant in [p[0] for p in found], found
