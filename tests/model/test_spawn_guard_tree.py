"""check_trace_tree: a valid tree conforms; each broken link is caught by its ID."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from metis_check._tree import check_trace_tree
from metis_model._agents import task_hash
from metis_trace import Assistant
from metis_trace import CallRef
from metis_trace import Commit
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Facts
from metis_trace import HookRef
from metis_trace import Mode
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import Source
from metis_trace import Spawn
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart

Tree = dict[str, tuple[TraceHeader, list[TraceEvent]]]
PARENT_TOOLS = ("read", "write", "bash", "spawn_agent")
GUARD = {"max_depth": 2, "max_total": 4, "max_per_parent": 2}


def _answer(events: list[TraceEvent], turn: int) -> None:
    n = len(events)
    events += [
        TurnStart(seq=n, t=n, turn=turn),
        Request(seq=n + 1, t=n + 1, turn=turn, causes=(n,)),
        Assistant(seq=n + 2, t=n + 2, turn=turn, causes=(n + 1,)),
        RunEnd(seq=n + 3, t=n + 3, status=RunStatus.COMPLETED),
    ]


def _parent_events(spawns: list[tuple[str, Mode, tuple[str, ...]]], mode: Mode) -> list[TraceEvent]:
    """One turn with one spawn_agent call per child, then an answer."""
    ev: list[TraceEvent] = [TurnStart(seq=0, t=0, turn=1), Request(seq=1, t=1, turn=1)]
    calls = tuple(
        CallRef(occ=f"1.{i}", call_id=f"c{i}", tool="spawn_agent") for i in range(len(spawns))
    )
    ev.append(Assistant(seq=2, t=2, turn=1, calls=calls))
    allow = RuleRef(behavior=RuleBehavior.ALLOW, source=Source.CLI, pattern="spawn_agent")
    for i in range(len(spawns)):
        s = len(ev)
        ev += [
            DecisionEvent(
                seq=s,
                t=s,
                occ=f"1.{i}",
                decision=Decision.ALLOW,
                stage="allow_rule",
                rule=allow,
                facts=Facts(mode=mode, kind=ToolKind.EXEC, rules=(allow,)),
            )
        ]
    for i, (agent_id, child_mode, child_tools) in enumerate(spawns):
        s = len(ev)
        ev += [
            EffectStart(seq=s, t=s, occ=f"1.{i}"),
            Spawn(
                seq=s + 1,
                t=s + 1,
                causes=(s,),
                agent_id=agent_id,
                child_mode=child_mode,
                child_tools=child_tools,
                parent_mode=mode,
                parent_tools=PARENT_TOOLS,
            ),
            Commit(seq=s + 2, t=s + 2, occ=f"1.{i}", outcome=EffectOutcome.OK),
            EffectEnd(seq=s + 3, t=s + 3, occ=f"1.{i}", outcome=EffectOutcome.OK, committed=True),
            Result(seq=s + 4, t=s + 4, occ=f"1.{i}", call_id=f"c{i}", status=ResultStatus.OK),
        ]
    s = len(ev)
    ev.append(
        ResultsSent(
            seq=s,
            t=s,
            turn=1,
            occs=tuple(c.occ for c in calls),
            call_ids=tuple(c.call_id for c in calls),
        )
    )
    _answer(ev, 2)
    return ev


def _header(
    agent_id: str,
    parent: str | None,
    depth: int,
    mode: Mode,
    tools: tuple[str, ...],
    hooks: tuple[HookRef, ...] = (),
    **meta: Any,
) -> TraceHeader:
    return TraceHeader(
        hooks=hooks,
        run_id=f"run-{agent_id}",
        root_run_id="run-root",
        parent_id=parent,
        agent_id=agent_id,
        depth=depth,
        mode=mode,
        tools=tools,
        meta=meta,
    )


def _leaf() -> list[TraceEvent]:
    ev: list[TraceEvent] = []
    _answer(ev, 1)
    return ev


CHILD_TOOLS = ("read", "write", "spawn_agent")


def valid_tree() -> Tree:
    """root -> a1 (planner, plan), a2 (implementer); a2 -> a3 (reviewer)."""
    hooks = (HookRef(id="cmd:deny-rm", matcher="bash"),)
    return {
        "root.jsonl": (
            _header("root", None, 0, Mode.DEFAULT, PARENT_TOOLS, guard=GUARD, hooks=hooks),
            _parent_events(
                [("a1", Mode.PLAN, ("read",)), ("a2", Mode.DEFAULT, CHILD_TOOLS)], Mode.DEFAULT
            ),
        ),
        "a1.jsonl": (
            _header(
                "a1",
                "root",
                1,
                Mode.PLAN,
                ("read",),
                agent="planner",
                task_hash=task_hash("plan"),
                hooks=hooks,
            ),
            _leaf(),
        ),
        "a2.jsonl": (
            _header(
                "a2",
                "root",
                1,
                Mode.DEFAULT,
                CHILD_TOOLS,
                agent="implementer",
                task_hash=task_hash("do"),
                hooks=hooks,
            ),
            _parent_events([("a3", Mode.DEFAULT, ("read",))], Mode.DEFAULT),
        ),
        "a3.jsonl": (
            _header(
                "a3",
                "a2",
                2,
                Mode.DEFAULT,
                ("read",),
                agent="reviewer",
                task_hash=task_hash("look"),
                hooks=(*hooks, HookRef(id="cmd:x")),
            ),
            _leaf(),
        ),
    }


def test_a_valid_tree_conforms_and_counts_its_checks() -> None:
    report = check_trace_tree(valid_tree())
    assert report.ok, report.violations
    assert report.checks["CHILD-5"] == 4
    assert report.checks["CHILD-6"] == 3
    assert report.checks["CHILD-4"] == 1
    assert report.events == sum(len(ev) for _, ev in valid_tree().values())


def _with_header(tree: Tree, name: str, **changes: Any) -> Tree:
    header, events = tree[name]
    tree[name] = (header.model_copy(update=changes), events)
    return tree


def _with_meta(tree: Tree, name: str, **meta: Any) -> Tree:
    header = tree[name][0]
    return _with_header(tree, name, meta={**header.meta, **meta})


MUTATIONS: dict[str, tuple[str, Callable[[Tree], Tree]]] = {
    "depth": ("CHILD-5", lambda t: _with_header(t, "a3.jsonl", depth=3)),
    "root run id": ("CHILD-5", lambda t: _with_header(t, "a1.jsonl", root_run_id="other")),
    "unknown parent": ("CHILD-5", lambda t: _with_header(t, "a3.jsonl", parent_id="ghost")),
    "no spawn for child": ("CHILD-5", lambda t: _with_header(t, "a1.jsonl", agent_id="a9")),
    "two roots": ("CHILD-5", lambda t: _with_header(t, "a1.jsonl", parent_id=None, depth=0)),
    "missing child trace": ("CHILD-5", lambda t: {k: v for k, v in t.items() if k != "a3.jsonl"}),
    "header mode differs from spawn": (
        "CHILD-5",
        lambda t: _with_header(t, "a1.jsonl", mode=Mode.DEFAULT),
    ),
    "child tools beyond parent": (
        "CHILD-1",
        lambda t: _with_header(
            _with_header(t, "a2.jsonl", tools=("read", "write", "spawn_agent", "grep")),
            "root.jsonl",
            tools=("read", "write", "bash", "spawn_agent"),
        ),
    ),
    "hook dropped": (
        "CHILD-6",
        lambda t: _with_header(t, "a3.jsonl", hooks=(HookRef(id="cmd:x"),)),
    ),
    "hook matcher narrowed": (
        "CHILD-6",
        lambda t: _with_header(t, "a2.jsonl", hooks=(HookRef(id="cmd:deny-rm", matcher="b*x"),)),
    ),
    "too deep for the guard": (
        "CHILD-4",
        lambda t: _with_meta(t, "root.jsonl", guard={**GUARD, "max_depth": 1}),
    ),
    "too many in total": (
        "CHILD-4",
        lambda t: _with_meta(t, "root.jsonl", guard={**GUARD, "max_total": 2}),
    ),
    "too many per parent": (
        "CHILD-4",
        lambda t: _with_meta(t, "root.jsonl", guard={**GUARD, "max_per_parent": 1}),
    ),
    "duplicate without force": (
        "CHILD-4",
        lambda t: _with_meta(t, "a3.jsonl", agent="planner", task_hash=task_hash("PLAN ")),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_broken_link_is_caught_with_its_id(name: str) -> None:
    expected, mutate = MUTATIONS[name]
    report = check_trace_tree(mutate(valid_tree()))
    assert not report.ok
    assert expected in {v.invariant for v in report.violations}, report.violations


def test_a_forced_duplicate_is_admitted() -> None:
    tree = _with_meta(
        valid_tree(), "a3.jsonl", agent="planner", task_hash=task_hash("plan"), forced=True
    )
    assert check_trace_tree(tree).ok


def test_a_broken_trace_inside_the_tree_is_reported_with_its_file() -> None:
    tree = valid_tree()
    header, events = tree["a1.jsonl"]
    tree["a1.jsonl"] = (header, events[1:])  # a request with no turn_start: seq 1 first
    report = check_trace_tree(tree)
    assert [v.invariant for v in report.violations] == ["TRACE-1"]
    assert report.violations[0].message.startswith("a1.jsonl: ")


def test_a_plan_child_keeping_spawn_agent_breaks_child3_across_the_tree() -> None:
    tree = _with_header(valid_tree(), "a1.jsonl", tools=("read", "spawn_agent"))
    # The parent's spawn event still says ("read",): the header disagrees (CHILD-5)
    # and, checked against the parent's tools, the plan lock is broken (CHILD-3).
    ids = {v.invariant for v in check_trace_tree(tree).violations}
    assert {"CHILD-5", "CHILD-3"} <= ids


def _clocked(tree: Tree, boots: dict[str, str] | None = None) -> Tree:
    """The traces' `meta.clock`: root at origin 0, the children later, so that
    a1 runs over [6, 13], a2 over [11, 23] and a3 over [15, 23] on one clock."""
    for name, origin in (
        ("root.jsonl", 0.0),
        ("a1.jsonl", 10.0),
        ("a2.jsonl", 10.0),
        ("a3.jsonl", 20.0),
    ):
        boot = (boots or {}).get(name, "boot-1")
        _with_meta(
            tree, name, clock={"source": "CLOCK_MONOTONIC", "origin": origin, "boot_id": boot}
        )
    return tree


@pytest.mark.parametrize(("limit", "ok"), [(2, True), (1, False)])
def test_children_running_at_once_beyond_max_concurrent_are_child_4(limit: int, ok: bool) -> None:
    tree = _clocked(valid_tree())
    tree = _with_meta(tree, "root.jsonl", guard={**GUARD, "max_concurrent": limit})
    report = check_trace_tree(tree)
    assert report.ok is ok, report.violations
    if not ok:
        # a2's admission sees a1 and a2 running; a3's sees a2 and a3.
        assert {v.invariant for v in report.violations} == {"CHILD-4"}
        assert any("2 agents running at once when a2" in v.message for v in report.violations)


def test_concurrency_says_nothing_where_the_clocks_do_not_compare() -> None:
    """One-sided: a child of another boot (or with no clock) is not counted."""
    tree = _clocked(valid_tree(), boots={"a2.jsonl": "boot-2"})
    tree = _with_meta(tree, "root.jsonl", guard={**GUARD, "max_concurrent": 1})
    assert check_trace_tree(tree).ok
    tree = _with_meta(valid_tree(), "root.jsonl", guard={**GUARD, "max_concurrent": 1})
    assert check_trace_tree(tree).ok


def _asked(tree: Tree, **input: Any) -> Tree:
    """The root's second spawn_agent call (a2's) carries `input`."""
    header, events = tree["root.jsonl"]
    out: list[TraceEvent] = []
    for e in events:
        if isinstance(e, Assistant) and e.calls:
            calls = list(e.calls)
            calls[1] = calls[1].model_copy(update={"input": {"agent": "x", "task": "t", **input}})
            e = e.model_copy(update={"calls": tuple(calls)})
        out.append(e)
    return {**tree, "root.jsonl": (header, out)}


@pytest.mark.parametrize(
    ("input", "ok"),
    [
        ({"tools": list(CHILD_TOOLS)}, True),
        ({"tools": ["read", "write", "spawn_agent", "bash"]}, True),
        ({"tools": []}, False),  # an empty allowlist gives no tools, not all
        ({"tools": ["read"]}, False),
        ({"disallowed_tools": ["bash"]}, True),
        ({"disallowed_tools": ["write"]}, False),
        # A name this check does not map (a Claude Code name) says nothing.
        ({"tools": ["Read"]}, True),
    ],
)
def test_a_childs_tools_keep_within_its_calls_lists_child_1(
    input: dict[str, Any], ok: bool
) -> None:
    report = check_trace_tree(_asked(valid_tree(), **input))
    assert report.ok is ok, report.violations
    if not ok:
        (v,) = report.violations
        assert v.invariant == "CHILD-1" and "a2" in v.message
