"""AUTH-4 for `WebFetch(domain:h)` rules: the model's host matching
(`metis_model/_derive.py`, `domain_rule_matches`, from Claude Code's docs)
on documented examples, and differentially against the production gate:
wherever the deriver is sure, the gate's facts hold every deny and ask rule
that matches and no rule that does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_model._derive import domain_rule_matches
from metis_model._derive import facts_problem
from metis_model._derive import recorded_permissions
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind
from metis_trace import TraceHeader


@pytest.mark.parametrize(
    ("spec", "url", "matches"),
    [
        ("domain:*.ex.com", "https://ex.com/", False),  # not the apex
        ("domain:*.ex.com", "https://a.ex.com/x", True),
        ("domain:*.ex.com", "https://a.b.ex.com", True),  # any depth
        ("domain:ex.com", "https://EX.com./", True),  # case, trailing dot
        ("domain:ex.com", "https://a.ex.com/", False),
        ("domain:ex.*", "https://ex.org", True),  # one label
        ("domain:ex.*", "https://ex.evil.com", False),
        ("domain:*", "https://anything.example", True),
        ("domain:ex.com:8080", "https://ex.com", None),  # ports: not read here
        ("domain:[::1]", "http://[::1]/", None),
        ("domain:ex.com", "ftp://ex.com", None),
        ("domain:ex.com", "https://ex.com:99999/", None),
    ],
)
def test_domain_rules_match_as_documented(spec: str, url: str, matches: bool | None) -> None:
    assert domain_rule_matches(spec, url) is matches


HOSTS = ("ex.com", "a.ex.com", "a.b.ex.com", "ex.org", "ex.evil.com", "docs.ex.com", "EX.COM.")
SPECS = ("ex.com", "*.ex.com", "ex.*", "*", "docs.ex.com", "*.docs.ex.com", "a.*.com")
_rule = st.tuples(
    st.sampled_from(SPECS),
    st.sampled_from(list(RuleBehavior)),
    st.sampled_from([Source.POLICY, Source.CLI, Source.PROJECT]),
)
COUNTS = {"cases": 0, "sure": 0}


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rules=st.lists(_rule, min_size=1, max_size=4),
    host=st.sampled_from(HOSTS),
    path=st.sampled_from(["/", "/docs/a", ""]),
    mode=st.sampled_from([Mode.DEFAULT, Mode.DONT_ASK, Mode.ACCEPT_EDITS]),
)
def test_the_gates_domain_facts_agree_with_the_deriver(
    tmp_path: Path, rules: Any, host: str, path: str, mode: Mode
) -> None:
    policy = Policy()
    for spec, behavior, source in rules:
        policy.add(source, behavior, f"WebFetch(domain:{spec})")
    gate = Gate(policy, mode, tmp_path, Route.HEADLESS)
    recorded = recorded_permissions(
        TraceHeader(run_id="d", root_run_id="d", meta={"permissions": gate.header_meta()})
    )
    assert recorded is not None
    input = {"url": f"https://{host}{path}", "prompt": "p"}
    decision = gate.decide("webfetch", input, ToolKind.READ_ONLY, ())
    sure, problem = facts_problem(recorded, "webfetch", input, decision.facts, set())
    COUNTS["cases"] += 1
    COUNTS["sure"] += sure
    assert problem is None, (problem, decision.facts)


def test_the_domain_differential_was_sure_often_enough() -> None:
    assert COUNTS["cases"] == 0 or COUNTS["sure"] > COUNTS["cases"] // 2, COUNTS
