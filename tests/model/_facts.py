"""The staged permission order's inputs (rules and facts), generated and
enumerated, shared by the model's tests, the z3 agreement tests and the
proof benchmark."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from hypothesis import strategies as st

from metis_trace import Facts
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import ToolKind


def rule_refs(
    patterns: st.SearchStrategy[str], recency: st.SearchStrategy[int]
) -> st.SearchStrategy[RuleRef]:
    """Rules of any behavior and source, with these patterns and recencies."""
    return st.builds(
        RuleRef,
        behavior=st.sampled_from(RuleBehavior),
        source=st.sampled_from(Source),
        pattern=patterns,
        recency=recency,
    )


def facts_of(rules: st.SearchStrategy[RuleRef], max_rules: int) -> st.SearchStrategy[Facts]:
    """Facts of any mode, kind and flags, with up to `max_rules` of `rules`."""
    return st.builds(
        Facts,
        mode=st.sampled_from(Mode),
        kind=st.sampled_from(ToolKind),
        protected=st.booleans(),
        secret=st.booleans(),
        in_scope=st.booleans(),
        transition=st.booleans(),
        rules=st.lists(rules, max_size=max_rules).map(tuple),
    )


def rule_free_facts() -> Iterator[Facts]:
    """Every fact without rules: each mode, kind and combination of the four flags."""
    for mode, kind, *flags in itertools.product(Mode, ToolKind, *[(False, True)] * 4):
        yield Facts(
            mode=mode,
            kind=kind,
            protected=flags[0],
            secret=flags[1],
            in_scope=flags[2],
            transition=flags[3],
        )
