"""A case: a mode, rules, a batch of calls, scripted answers and the route."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

from ._shells import Shell
from ._shells import shells
from ._world import PARENT_ROUTES
from ._world import PATHS
from ._world import RULES
from ._world import PathAtom
from ._world import RuleTemplate


@attrs.frozen
class RuleDraw:
    source: Source
    behavior: RuleBehavior
    rule: RuleTemplate


@attrs.frozen
class Call:
    """A call: `path` for file tools, `shell` for bash."""

    tool: str
    path: PathAtom | None = None
    shell: Shell | None = None


@attrs.frozen
class ChildDraw:
    parent_route: Route
    parent_mode: Mode
    requested: Mode | None
    extra_deny: tuple[RuleTemplate, ...]


@attrs.frozen
class Case:
    route: Route
    mode: Mode
    rules: tuple[RuleDraw, ...]
    calls: tuple[Call, ...]
    answers: tuple[bool, ...]  # the scripted answer to the k-th ask
    headless_default: Decision
    transition: bool
    child: ChildDraw | None = None


def rule_draws() -> st.SearchStrategy[RuleDraw]:
    return st.builds(
        RuleDraw, st.sampled_from(Source), st.sampled_from(RuleBehavior), st.sampled_from(RULES)
    )


def calls() -> st.SearchStrategy[Call]:
    file_calls = st.builds(
        Call, st.sampled_from(("read", "write", "edit", "ls", "grep")), st.sampled_from(PATHS)
    )
    bash_calls = shells().map(lambda s: Call("bash", shell=s))
    return st.one_of(file_calls, bash_calls)


def cases(route: Route) -> st.SearchStrategy[Case]:
    """Cases for one route; a child case also draws its parent."""
    child: st.SearchStrategy[ChildDraw | None] = st.none()
    if route is Route.CHILD:
        child = st.builds(
            ChildDraw,
            st.sampled_from(PARENT_ROUTES),
            st.sampled_from(Mode),
            st.none() | st.sampled_from(Mode),
            st.lists(st.sampled_from(RULES), max_size=2).map(tuple),
        )
    return st.builds(
        Case,
        st.just(route),
        st.sampled_from(Mode),
        st.lists(rule_draws(), max_size=6).map(tuple),
        st.lists(calls(), min_size=1, max_size=4).map(tuple),
        st.lists(st.booleans(), min_size=4, max_size=4).map(tuple),
        st.sampled_from((Decision.DENY, Decision.ALLOW)),
        st.booleans(),
        child,
    )
