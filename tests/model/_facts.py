"""Hypothesis strategies for the staged permission order's inputs (rules and
facts), shared by the model's tests and the z3 agreement tests."""

from __future__ import annotations

from hypothesis import strategies as st

from metis_trace import Facts, Mode, RuleBehavior, RuleRef, Source, ToolKind


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
