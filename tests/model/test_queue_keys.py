"""SCHED-2's key clause: a Queue edit call writes only within what its key names
(specs/scheduler.md, "A Queue key names what its call writes").

Each of SCHED-2's clauses has its edit (`SCHED_2_CLAUSES`): on simulated runs
both checkers (the fast replay and the specification's `step`) report SCHED-2
at the same event. The clause is judged at the decision, so an integration
classed Queue under an agent's key is caught whatever ran beside it; a Queue
`exec` call (an MCP server's declared class) is not judged by it. And the
explorer's replay fills a child's fresh id into an answer that names it by
its definition (`agents:integrate` reaches `integrate_agent` that way).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_check._mutate_sched import SCHED_2_CLAUSES
from metis_model._interference import queue_key_problem
from metis_runtime.providers import Cassette
from metis_runtime.providers import Interaction
from metis_studies.explore._child_ids import ChildIdReplay
from metis_studies.explore._child_ids import names_children
from metis_studies.explore._mech_agents import integrate
from metis_trace import CallClass
from metis_trace import DecisionEvent
from metis_trace import ToolKind


def _broken(clause: str, seed: int) -> tuple[Any, list[Any], list[Any]]:
    for s in range(seed, seed + 200):
        header, events = simulate(s, RICH)
        broken = SCHED_2_CLAUSES[clause](list(events), random.Random(s))
        if broken is not None:
            return header, list(events), broken
    raise AssertionError(f"no simulated run from {seed} has what {clause} edits")


@pytest.mark.parametrize("clause", sorted(SCHED_2_CLAUSES))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 5_000))
def test_each_clause_is_caught_by_both_checkers(clause: str, seed: int) -> None:
    header, events, broken = _broken(clause, seed)
    assert check_trace(events, header).ok
    fast, slow = check_trace(broken, header), check_trace(broken, header, reference=True)
    assert fast.first is not None and slow.first is not None
    assert (fast.first.invariant, fast.first.index) == ("SCHED-2", slow.first.index)
    assert slow.first.invariant == "SCHED-2"


def _queue_edit(events: list[Any]) -> DecisionEvent:
    return next(
        e
        for e in events
        if isinstance(e, DecisionEvent)
        and e.cls is CallClass.QUEUE
        and e.facts.kind is ToolKind.EDIT
    )


def test_a_queue_edit_is_judged_at_its_decision_and_counted() -> None:
    header, events = simulate(3, RICH)
    d = _queue_edit(list(events))
    assert queue_key_problem(d) is None
    # an integration classed as an agent's Queue call: the key names no file
    agent = d.model_copy(update={"key": "agents:integrator-6b17529c"})
    assert "does not name" in (queue_key_problem(agent) or "")
    # more than the key's file, or nothing written at all under a file key
    wider = d.model_copy(update={"writes": (*d.writes, "/ws/other.txt")})
    assert "/ws/other.txt" in (queue_key_problem(wider) or "")
    assert queue_key_problem(d.model_copy(update={"writes": ()})) is None
    # an exec Queue call (an MCP server's declared `queue:db`) writes what it
    # may (everything): no key could name it, so the clause does not judge it
    facts = d.facts.model_copy(update={"kind": ToolKind.EXEC})
    mcp = d.model_copy(update={"key": "mcp:db", "writes": ("/",), "facts": facts})
    assert queue_key_problem(mcp) is None
    report = check_trace(events, header)
    assert report.ok and report.checks["SCHED-2"] >= 1


def _cassette(body: str) -> Cassette:
    item = Interaction(uri="u", wire="anthropic", base_url="b", status=200, body=body)
    return Cassette(Path("c.yaml"), (item,))


def test_the_replay_fills_in_the_childs_fresh_id() -> None:
    ids = ["integrator-00000001", "reviewer-0000000a", "integrator-0000abcd"]
    replay = ChildIdReplay(_cassette('{"agent_id": "@@child:integrator@@"}'), lambda: ids)
    replay.stream(None)  # type: ignore[arg-type]  # the request is not read before it is played
    assert replay.cassette.interactions[0].body == '{"agent_id": "integrator-0000abcd"}'
    none = ChildIdReplay(_cassette("@@child:nobody@@"), lambda: ids)
    none.stream(None)  # type: ignore[arg-type]
    assert none.cassette.interactions[0].body == "@@child:nobody@@"  # an unknown id: refused


def test_a_workload_naming_a_child_never_runs_as_metis_run() -> None:
    from metis_studies.explore._harness import runs_as_metis_run

    workload = integrate()
    assert names_children(workload) and not runs_as_metis_run(workload)
    plain = workload.model_copy(update={"turns": workload.turns[:1] + workload.turns[-1:]})
    assert not names_children(plain)


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("key", [False, True])
def test_a_z3_paths_queue_call_writes_within_its_key_as_labelled_and_meets_reads_by_region(
    key: bool, keyed: bool
) -> None:
    """The z3 paths' traces (`metis_proofs._convert`): a Queue call's writes lie
    within its key exactly when the label says it is `keyed` (the system's
    SCHED-2 key clause), so the model's `queue_key_problem` agrees with the
    label, and a Safe read meets a write exactly where their regions meet."""
    from metis_model._interference import _within
    from metis_model._interference import paths_overlap
    from metis_proofs._convert import _footprint
    from metis_proofs._convert import _key

    named = (_key(CallClass.QUEUE, key) or "")[len("file:") :]
    for wr in ([0], [1], [0, 1], []):
        _, writes = _footprint(CallClass.QUEUE, key, {"drd": [], "dwr": wr}, keyed)
        if keyed:
            assert all(_within(w, named) for w in writes)
        else:  # not one of them is within any key
            assert not any(_within(w, k[len("file:") :]) for w in writes for k in _keys())
        for rd in ([0], [1], [0, 1], []):
            for reader_key in (key, not key):
                reads, _ = _footprint(CallClass.SAFE, reader_key, {"drd": rd, "dwr": []})
                assert paths_overlap(reads, writes) == bool(set(rd) & set(wr)), (rd, wr)


def _keys() -> list[str]:
    from metis_proofs._convert import _key

    return [k for b in (False, True) if (k := _key(CallClass.QUEUE, b)) is not None]
