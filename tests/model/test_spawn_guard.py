"""The spawn guard model (specs/children.md, CHILD-4): order of checks, limits."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from metis_model import _agents
from metis_model._agents import GUARD_ORDER
from metis_model._agents import Admit
from metis_model._agents import GuardLimits
from metis_model._agents import GuardState
from metis_model._agents import Refusal
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest
from metis_model._agents import admit
from metis_model._agents import finish
from metis_model._agents import guard_decision
from metis_model._agents import normalize_task
from metis_model._agents import task_hash


def test_all_lists_the_public_names() -> None:
    public = {n for n, v in vars(_agents).items() if not n.startswith("_")}
    imported = {"annotations", "hashlib", "attrs", "Counter", "Mapping", "Sequence", "StrEnum"}
    imported |= {"MappingProxyType", "Any", "check_trace", "spawn_violation", "Report"}
    imported |= {"Violation", "Spawn", "TraceEvent", "TraceHeader", "Traces"}
    imported |= {"RuleBehavior", "recorded_permissions"}
    assert set(_agents.__all__) == public - imported


def test_defaults_are_the_seed_values() -> None:
    assert GuardLimits() == GuardLimits(5, 32, 8, 4, 600.0)
    assert GUARD_ORDER == (
        RefusalCode.DEPTH_LIMIT,
        RefusalCode.TOTAL_LIMIT,
        RefusalCode.PER_PARENT_LIMIT,
        RefusalCode.CONCURRENCY_LIMIT,
        RefusalCode.DUPLICATE_TASK_WARNING,
    )


# ASCII: Unicode case mapping is not an involution ("ß".upper() == "SS").
@given(st.text(alphabet="abcXYZ 019\t\n.", max_size=40))
def test_task_hash_ignores_case_and_whitespace(text: str) -> None:
    noisy = "  " + "\t\n ".join(text.upper().split()) + "\n"
    assert task_hash(noisy) == task_hash(text.lower())
    assert normalize_task(noisy) == normalize_task(text)


def test_task_hash_tells_different_tasks_apart() -> None:
    assert task_hash("fix the bug") != task_hash("fix the bugs")
    assert task_hash("  Fix   THE\nbug ") == task_hash("fix the bug")


# --- the order of the checks ---------------------------------------------------

_LIM = GuardLimits(max_depth=3, max_total=6, max_per_parent=3, max_concurrent=2)


def _state_breaking(broken: frozenset[RefusalCode]) -> tuple[GuardState, SpawnRequest]:
    """A state and request that break exactly the checks in `broken`."""
    depth = _LIM.max_depth if RefusalCode.DEPTH_LIMIT in broken else 0
    total = _LIM.max_total if RefusalCode.TOTAL_LIMIT in broken else 1
    per = _LIM.max_per_parent if RefusalCode.PER_PARENT_LIMIT in broken else 0
    running = (
        frozenset(f"r{i}" for i in range(_LIM.max_concurrent))
        if (RefusalCode.CONCURRENCY_LIMIT in broken)
        else frozenset()
    )
    tasks = (
        frozenset({("planner", task_hash("plan it"))})
        if (RefusalCode.DUPLICATE_TASK_WARNING in broken)
        else frozenset()
    )
    state = GuardState(_LIM, total, {"p": per}, running, tasks)
    return state, SpawnRequest("p", depth, "planner", "Plan  IT")


@given(st.frozensets(st.sampled_from(RefusalCode)))
def test_child4_the_first_failing_check_in_order_refuses(broken: frozenset[RefusalCode]) -> None:
    state, request = _state_breaking(broken)
    got = guard_decision(state, request)
    if not broken:
        assert got == Admit(1, task_hash("plan it"))
        return
    first = next(code for code in GUARD_ORDER if code in broken)
    assert isinstance(got, Refusal) and got.code is first, got


@given(st.booleans(), st.text(alphabet=" ab", max_size=4))
def test_duplicate_needs_force_or_a_rationale(force: bool, rationale: str) -> None:
    state, request = _state_breaking(frozenset({RefusalCode.DUPLICATE_TASK_WARNING}))
    got = guard_decision(state, attrs.evolve(request, force=force, rationale=rationale))
    overridden = force or bool(rationale.strip())
    assert isinstance(got, Admit) == overridden
    # A different agent name is not a duplicate of the planner's task.
    assert isinstance(guard_decision(state, attrs.evolve(request, agent="reviewer")), Admit)


# --- limits are never exceeded over any run --------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("spawn"),
            st.integers(0, 4),  # which parent (index among agents so far)
            st.sampled_from(["planner", "implementer"]),
            st.sampled_from(["a", "b", "A ", "c"]),
            st.booleans(),
        ),
        st.tuples(st.just("finish"), st.integers(0, 10)),
    ),
    max_size=60,
)


@given(
    ops,
    st.builds(
        GuardLimits,
        st.integers(0, 4),
        st.integers(0, 10),
        st.integers(0, 4),
        st.integers(0, 4),
    ),
)
def test_child4_no_admitted_spawn_exceeds_a_limit(program, limits: GuardLimits) -> None:
    state = GuardState(limits)
    depth_of = {"root": 0}
    children_of: dict[str, int] = {}
    unforced: set[tuple[str, str]] = set()
    n = 0
    for op in program:
        if op[0] == "finish":
            running = sorted(state.running)
            if running:
                state = finish(state, running[op[1] % len(running)])
            continue
        _, parent_ix, agent, task, force = op
        agents = sorted(depth_of)
        parent = agents[parent_ix % len(agents)]
        request = SpawnRequest(parent, depth_of[parent], agent, task, force=force)
        got = guard_decision(state, request)
        if isinstance(got, Refusal):
            continue
        n += 1
        child = f"a{n}"
        state = admit(state, request, child)
        depth_of[child] = got.depth
        children_of[parent] = children_of.get(parent, 0) + 1
        assert got.depth == depth_of[parent] + 1 <= limits.max_depth
        assert state.total == n <= limits.max_total
        assert children_of[parent] <= limits.max_per_parent
        assert len(state.running) <= limits.max_concurrent
        if not force:
            assert (agent, task_hash(task)) not in unforced
            unforced.add((agent, task_hash(task)))


def test_finish_frees_a_concurrency_slot_but_not_the_total() -> None:
    state = GuardState(GuardLimits(max_concurrent=1, max_total=2))
    first = SpawnRequest("root", 0, "planner", "one")
    state = admit(state, first, "a1")
    second = SpawnRequest("root", 0, "planner", "two")
    refused = guard_decision(state, second)
    assert isinstance(refused, Refusal) and refused.code is RefusalCode.CONCURRENCY_LIMIT
    state = finish(state, "a1")
    assert isinstance(guard_decision(state, second), Admit)
    state = admit(state, second, "a2")
    third = guard_decision(finish(state, "a2"), SpawnRequest("root", 0, "planner", "three"))
    assert isinstance(third, Refusal) and third.code is RefusalCode.TOTAL_LIMIT
