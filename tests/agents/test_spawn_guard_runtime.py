"""The runtime spawn guard: equal to the model, and race-free across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_model import _agents as model
from metis_runtime.agents import GuardAdmit
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import GuardRefusal
from metis_runtime.agents import GuardRequest
from metis_runtime.agents import GuardSnapshot
from metis_runtime.agents import SpawnLedger
from metis_runtime.agents import decide
from metis_runtime.agents import task_digest
from metis_runtime.agents._guard import GuardCode

from ._support import REPO

AGENTS = ["planner", "implementer"]
TASKS = ["plan it", "PLAN  it", "build", "review"]


@st.composite
def situations(
    draw: st.DrawFn,
) -> tuple[model.GuardState, GuardSnapshot, model.SpawnRequest, GuardRequest]:
    lim = draw(st.tuples(*(st.integers(0, 4) for _ in range(4))))
    per = draw(st.dictionaries(st.sampled_from(["root", "a", "b"]), st.integers(0, 5), max_size=3))
    running = draw(st.frozensets(st.sampled_from(["x", "y", "z", "w", "v"])))
    tasks = draw(
        st.frozensets(st.tuples(st.sampled_from(AGENTS), st.sampled_from(TASKS).map(task_digest)))
    )
    total = draw(st.integers(0, 6))
    parent = draw(st.sampled_from(["root", "a", "b", "c"]))
    depth = draw(st.integers(0, 5))
    agent = draw(st.sampled_from(AGENTS))
    task = draw(st.sampled_from(TASKS))
    force = draw(st.booleans())
    rationale = draw(st.sampled_from(["", " ", "needed again"]))
    m_state = model.GuardState(model.GuardLimits(*lim), total, per, running, frozenset(tasks))
    r_state = GuardSnapshot(
        GuardLimits(*lim),
        total,
        tuple(sorted(per.items())),
        tuple(sorted(running)),
        tuple(sorted(tasks)),
    )
    return (
        m_state,
        r_state,
        model.SpawnRequest(parent, depth, agent, task, force, rationale),
        GuardRequest(parent, depth, agent, task, force, rationale),
    )


@given(situations())
def test_child4_the_runtime_guard_equals_the_model(s: tuple) -> None:  # type: ignore[type-arg]
    m_state, r_state, m_req, r_req = s
    want = model.guard_decision(m_state, m_req)
    got = decide(r_state, r_req)
    if isinstance(want, model.Refusal):
        assert isinstance(got, GuardRefusal) and got.code.value == want.code.value
    else:
        assert isinstance(got, GuardAdmit)
        assert (got.depth, got.task_hash) == (want.depth, want.task_hash)
    assert task_digest(r_req.task) == model.task_hash(m_req.task)


def test_the_ledger_counts_and_releases(tmp_path: Path) -> None:
    ledger = SpawnLedger.create(tmp_path / "guard.json", GuardLimits(max_concurrent=1, max_total=3))
    first = ledger.request(GuardRequest("root", 0, "planner", "a"), "p1")
    assert isinstance(first, GuardAdmit) and first.depth == 1 and not first.forced
    busy = ledger.request(GuardRequest("root", 0, "planner", "b"), "p2")
    assert isinstance(busy, GuardRefusal) and busy.code is GuardCode.CONCURRENCY_LIMIT
    ledger.started("p1", 999_999_999)  # a pid that does not exist: reaped next time
    again = ledger.request(GuardRequest("root", 0, "planner", " A "), "p3")
    assert isinstance(again, GuardRefusal) and again.code is GuardCode.DUPLICATE_TASK_WARNING
    forced = ledger.request(GuardRequest("root", 0, "planner", " A ", rationale="retry"), "p3")
    assert isinstance(forced, GuardAdmit) and forced.forced
    ledger.finished("p3")
    snap = ledger.snapshot()
    assert snap.total == 2 and snap.running == () and snap.per_parent == (("root", 2),)
    ledger.request(GuardRequest("root", 0, "planner", "c"), "p4")
    ledger.finished("p4")
    last = ledger.request(GuardRequest("root", 0, "planner", "d"), "p5")
    assert isinstance(last, GuardRefusal) and last.code is GuardCode.TOTAL_LIMIT


_RACER = """
import json, sys
from metis_runtime.agents import GuardRequest, SpawnLedger
ledger = SpawnLedger(sys.argv[1])
got = ledger.request(GuardRequest("root", 0, "implementer", "task " + sys.argv[2]), "a" + sys.argv[2])
print(json.dumps(type(got).__name__))
"""


def test_processes_racing_for_slots_never_exceed_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "guard.json"
    SpawnLedger.create(path, GuardLimits(max_total=3, max_concurrent=100, max_per_parent=100))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(path), str(i)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for i in range(8)
    ]
    try:
        outcomes = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert outcomes.count("GuardAdmit") == 3
    assert json.loads(path.read_text())["total"] == 3


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_depth must be >= 0"):
        GuardLimits(max_depth=-1)
    with pytest.raises(ValueError, match="timeout_s"):
        GuardLimits(timeout_s=0)
