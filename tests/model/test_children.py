"""Child authority (specs/children.md): surface, mode, plan lock."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from metis_model import PLAN_LOCKED_REMOVED
from metis_model import ChildAuthority
from metis_model import ChildRefusal
from metis_model import child_authority
from metis_model import child_surface
from metis_model import mode_at_most
from metis_model import spawn_violation
from metis_trace import Mode

TOOLS = ["read", "edit", "bash", "spawn_agent", "exit_plan_mode", "grep"]
tool_sets = st.lists(st.sampled_from(TOOLS), unique=True)


@given(tool_sets, st.none() | tool_sets, st.none() | tool_sets, st.lists(tool_sets, max_size=2))
def test_child1_surface_is_a_subset_of_the_parent(parent, profile, callsite, denies) -> None:
    surface = child_surface(parent, profile, callsite, denies)
    assert surface <= set(parent)
    for deny in denies:
        assert not surface & set(deny)


@given(st.sampled_from(Mode), st.none() | st.sampled_from(Mode), tool_sets)
def test_child2_child3_granted_authority_never_exceeds_the_parent(parent, requested, tools) -> None:
    got = child_authority(parent, tools, requested)
    if isinstance(got, ChildRefusal):
        assert requested is not None and not mode_at_most(requested, parent)
        assert parent is not Mode.PLAN  # a plan parent always yields a plan child
        return
    assert mode_at_most(got.mode, parent)
    if parent is Mode.PLAN:
        assert got.mode is Mode.PLAN
        assert not got.tools & PLAN_LOCKED_REMOVED
    assert spawn_violation(parent, tools, got.mode, got.tools) is None
    assert spawn_violation(parent, tools, got.mode, got.tools, requested) is None


@given(st.sampled_from(Mode), st.sampled_from(Mode), st.sampled_from(Mode))
def test_child2_a_recorded_request_is_granted_as_asked_or_refused(parent, requested, child) -> None:
    """A spawn that records the mode asked for conforms exactly when
    `child_authority` would have started that child in that mode."""
    got = child_authority(parent, TOOLS, requested)
    broken = spawn_violation(parent, TOOLS, child, [], requested)
    if isinstance(got, ChildAuthority) and got.mode is child:
        assert broken is None
    else:
        assert broken is not None and broken[0] in ("CHILD-2", "CHILD-3"), broken
        if parent is not Mode.PLAN:
            assert broken[0] == "CHILD-2"


def test_child2_an_escalating_request_admitted_or_a_mode_not_granted() -> None:
    # mutant 21: a default parent started a child that asked for bypass (its
    # gate then capped it at default): the spawn itself breaks CHILD-2
    broken = spawn_violation(Mode.DEFAULT, ["read"], Mode.DEFAULT, ["read"], Mode.BYPASS)
    assert broken is not None and broken[0] == "CHILD-2" and "must be refused" in broken[1]
    broken = spawn_violation(Mode.DEFAULT, ["read"], Mode.DEFAULT, ["read"], Mode.PLAN)
    assert broken == ("CHILD-2", "the child asked for plan and runs in default")
    assert spawn_violation(Mode.PLAN, ["read"], Mode.PLAN, ["read"], Mode.BYPASS) is None


def test_default_parent_cannot_start_accept_edits_or_bypass() -> None:
    for mode in (Mode.ACCEPT_EDITS, Mode.BYPASS):
        assert isinstance(child_authority(Mode.DEFAULT, TOOLS, mode), ChildRefusal)
    assert child_authority(Mode.PLAN, TOOLS, Mode.BYPASS) == ChildAuthority(
        Mode.PLAN, frozenset({"read", "edit", "bash", "grep"})
    )


def test_spawn_violation_names_each_child_invariant() -> None:
    assert spawn_violation(Mode.DEFAULT, ["read"], Mode.DEFAULT, ["read", "bash"])[0] == "CHILD-1"  # type: ignore[index]
    assert spawn_violation(Mode.DEFAULT, ["read"], Mode.BYPASS, ["read"])[0] == "CHILD-2"  # type: ignore[index]
    assert spawn_violation(Mode.PLAN, ["read"], Mode.DEFAULT, ["read"])[0] == "CHILD-3"  # type: ignore[index]
    assert (
        spawn_violation(Mode.PLAN, ["read", "spawn_agent"], Mode.PLAN, ["spawn_agent"])[0]
        == "CHILD-3"
    )  # type: ignore[index]
