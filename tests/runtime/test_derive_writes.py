"""AUTH-4's `kind` fact: a Bash line the deriver is sure may write is never
`read_only` in the runtime's shell analysis (`BashTool.kind`), checked on
examples from POSIX's redirection and utility rules and differentially on
lines Hypothesis builds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_model._derive import facts_problem
from metis_model._derive import recorded_permissions
from metis_model._derive_shell import surely_writes
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.tools import BashTool
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import ToolKind
from metis_trace import TraceHeader


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        ("uniq notes.txt out.txt", "out.txt"),
        ("uniq -c -f 1 notes.txt out.txt", "out.txt"),
        ("uniq notes.txt", None),
        ("uniq notes.txt -", None),  # stdout
        ("uniq --bogus a b", None),  # an option not read here
        ("cat <> new.txt", "new.txt"),  # POSIX 2.7.7: created when missing
        ("cat < notes.txt", None),
        ("echo x>y", "y"),
        ("ls &> log", "log"),
        ("sort a | tee b", "b"),
        ("echo x 2>&1", None),
        ("ls >&2", None),
        ("echo x > /dev/null", None),
        ('echo ">" x', None),  # a quoted `>` is a word
        ("echo \\> x", None),
        ("[[ a > b ]]", None),  # a comparison, not a redirection
        ("cat <<EOF > x", None),  # a here-document's body is not read
        ("ls # > x", None),  # a comment
        ("cat >(wc)", None),  # process substitution
    ],
)
def test_surely_writes_follows_the_shells_rules(line: str, writes: str | None) -> None:
    found = surely_writes(line)
    assert (found is None) is (writes is None), found
    if writes is not None:
        assert found is not None and found.targets == (writes,) and writes in found.reason


def test_a_read_only_kind_for_a_writing_line_is_auth_4(tmp_path: Path) -> None:
    meta = Gate(Policy(), Mode.PLAN, tmp_path, Route.HEADLESS).header_meta()
    recorded = recorded_permissions(
        TraceHeader(run_id="d", root_run_id="d", meta={"permissions": meta})
    )
    assert recorded is not None
    facts = Facts(mode=Mode.PLAN, kind=ToolKind.READ_ONLY)
    sure, problem = facts_problem(recorded, "bash", {"command": "uniq a b"}, facts, ())
    assert sure and problem is not None and "read_only" in problem
    exec_facts = Facts(mode=Mode.PLAN, kind=ToolKind.EXEC)
    assert facts_problem(recorded, "bash", {"command": "uniq a b"}, exec_facts, ()) == (True, None)


READS = ("cat notes.txt", "uniq notes.txt", "sort notes.txt", "wc -l notes.txt", "ls", "echo hi")
WRITES = (
    "uniq notes.txt out.txt",
    "uniq -d notes.txt out.txt",
    "cat <> made.txt",
    "grep x notes.txt > hits.txt",
    "sort notes.txt >> all.txt",
    "ls &> log",
    "echo x >| forced.txt",
    "cat notes.txt | tee copy.txt",
    "wc -l notes.txt 2> err.txt",
)
_line = st.lists(st.sampled_from(READS + WRITES), min_size=1, max_size=3).flatmap(
    lambda parts: st.lists(
        st.sampled_from([" && ", "; ", " | ", " || "]),
        min_size=len(parts) - 1,
        max_size=len(parts) - 1,
    ).map(lambda ops: parts[0] + "".join(o + p for o, p in zip(ops, parts[1:], strict=True)))
)
SURE = {"lines": 0, "sure": 0}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(line=_line)
def test_a_line_the_deriver_says_may_write_is_never_read_only(line: str) -> None:
    SURE["lines"] += 1
    if surely_writes(line) is None:
        return
    SURE["sure"] += 1
    assert BashTool().kind({"command": line}) is not ToolKind.READ_ONLY, line


def test_the_writes_differential_was_sure_often_enough() -> None:
    """A check that cannot fail is a defect: most drawn lines hold a write."""
    assert SURE["lines"] == 0 or SURE["sure"] > SURE["lines"] // 3, SURE
