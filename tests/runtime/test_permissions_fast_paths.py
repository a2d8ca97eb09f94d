"""The gate's shortcuts decide exactly as the full computation does: the
per-tool rule index of a policy, the decisions kept for calls no rule applies
to, and the path checks written for speed (against their plain definitions)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Policy
from metis_runtime.permissions import is_protected
from metis_runtime.permissions import is_secret
from metis_runtime.permissions._paths import _NOT_SECRET
from metis_runtime.permissions._paths import PROTECTED_DIRS
from metis_runtime.permissions._paths import PROTECTED_FILES
from metis_runtime.permissions._paths import SECRET_PATTERNS
from metis_runtime.permissions._paths import is_within
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind

_TOOLS = ["noop", "Noop", "read", "edit", "grep", "bash", "mcp__gh__issue"]
_PATTERNS = [
    "Bash",
    "Bash(rm:*)",
    "Bash(git status:*)",
    "Read",
    "Read(src/**)",
    "Edit",
    "Edit(src/**)",
    "WebFetch(domain:example.com)",
    "mcp__gh",
    "noop",
]
_PATHS = ["src/a.py", ".env", ".git/config", "/etc/hosts", "b.txt"]

_add = st.tuples(
    st.just("add"),
    st.sampled_from(["parent", "child"]),
    st.sampled_from(list(Source)),
    st.sampled_from(list(RuleBehavior)),
    st.sampled_from(_PATTERNS),
)
_call = st.tuples(
    st.just("call"),
    st.sampled_from(["parent", "child"]),
    st.sampled_from(_TOOLS),
    st.sampled_from([ToolKind.READ_ONLY, ToolKind.EDIT, ToolKind.EXEC]),
    st.one_of(st.just([]), st.lists(st.sampled_from(_PATHS), max_size=2)),
    st.sampled_from([None, "ls", "rm x", "git status", "eval $X"]),
)
_mode = st.tuples(
    st.just("mode"), st.sampled_from(["parent", "child"]), st.sampled_from(list(Mode))
)
_flag = st.tuples(st.just("transition"), st.sampled_from(["parent", "child"]), st.booleans())


def _full(g: Gate, tool: str, kind: ToolKind, paths: list[str], cmd: str | None) -> GateDecision:
    """The decision computed from scratch: a rule list filtered now."""
    fresh = [r for r in g.policy.rules if r.applies_to(tool)]
    assert list(g.policy.rules_for(tool)) == fresh  # the index is current
    return g._decide(tool, {"command": cmd} if cmd else {}, kind, paths, cmd)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_add, _call, _mode, _flag), min_size=1, max_size=40))
def test_decide_equals_the_full_computation_through_a_session(
    steps: list[tuple[object, ...]],
) -> None:
    """Rules added to a parent or to its child's derived policy, mode changes
    and transitions interleaved with calls: every decision (cached or not)
    equals the one computed from scratch at that moment."""
    ws = Path(os.path.realpath("/tmp"))
    parent = Gate(Policy(), Mode.DEFAULT, ws, Route.HEADLESS)
    child = parent.clone_for_child(Mode.DEFAULT)
    assert isinstance(child, Gate)
    gates = {"parent": parent, "child": child}
    for step in steps:
        g = gates[str(step[1])]
        if step[0] == "add":
            _, _, source, behavior, pattern = step
            g.policy.add(source, behavior, pattern)  # type: ignore[arg-type]
        elif step[0] == "mode":
            g.begin_transition()
            g.complete_transition(step[2])  # type: ignore[arg-type]
        elif step[0] == "transition":
            if step[2]:
                g.begin_transition()
            else:
                g.complete_transition(g.mode)
        else:
            _, _, tool, kind, paths, cmd = step
            assert isinstance(tool, str) and isinstance(kind, ToolKind)
            assert isinstance(paths, list) and (cmd is None or isinstance(cmd, str))
            input = {"command": cmd} if cmd else {}
            for _ in range(2):  # the second time from the kept decision, if any
                got = g.decide(tool, input, kind, paths, cmd)
                assert got == _full(g, tool, kind, paths, cmd)


def test_a_rule_added_after_a_kept_decision_counts(tmp_path: Path) -> None:
    p = Policy()
    g = Gate(p, Mode.DEFAULT, tmp_path, Route.HEADLESS)
    child = g.clone_for_child()
    assert isinstance(child, Gate)
    for gate in (g, child):
        d = gate.decide("noop", {}, ToolKind.EXEC)
        assert (d.decision, d.stage) == (Decision.ASK, Stage.MODE)
        assert gate.decide("noop", {}, ToolKind.EXEC) is d  # kept
    p.add(Source.SESSION, RuleBehavior.ALLOW, "noop")  # an approval, mid-session
    for gate in (g, child):
        d = gate.decide("noop", {}, ToolKind.EXEC)
        assert (d.decision, d.stage) == (Decision.ALLOW, Stage.ALLOW_RULE)
    child.policy.add(Source.SESSION, RuleBehavior.DENY, "noop")  # the child's own
    assert child.decide("noop", {}, ToolKind.EXEC).decision is Decision.DENY
    assert g.decide("noop", {}, ToolKind.EXEC).decision is Decision.ALLOW


def test_kept_decisions_follow_the_mode_and_transitions(tmp_path: Path) -> None:
    g = Gate(Policy(), Mode.ACCEPT_EDITS, tmp_path, Route.HEADLESS)
    child = g.clone_for_child()
    assert isinstance(child, Gate)
    assert child.decide("noop", {}, ToolKind.EDIT).decision is Decision.ALLOW
    assert child.decide("noop", {}, ToolKind.READ_ONLY).stage is Stage.MODE
    g.begin_transition()  # the parent's transition holds the child too
    assert child.decide("noop", {}, ToolKind.READ_ONLY).stage is Stage.TRANSITION
    g.complete_transition(Mode.DEFAULT)  # the child is capped, live
    assert child.decide("noop", {}, ToolKind.EDIT).decision is Decision.ASK
    assert g.decide("noop", {}, "edit").decision is Decision.ASK  # type: ignore[arg-type]
    g.begin_transition()
    assert g.decide("noop", {}, ToolKind.EDIT).stage is Stage.TRANSITION
    g.complete_transition(Mode.ACCEPT_EDITS)
    assert child.decide("noop", {}, ToolKind.EDIT).decision is Decision.ALLOW


def test_bash_decisions_are_never_kept(tmp_path: Path) -> None:
    g = Gate(Policy(), Mode.DEFAULT, tmp_path, Route.HEADLESS)
    assert g.decide("bash", {"command": "ls"}, ToolKind.READ_ONLY).decision is Decision.ALLOW
    d = g.decide("Bash", {"command": "rm -rf x"}, ToolKind.READ_ONLY)
    assert (
        d.facts.kind is ToolKind.EDIT and d.decision is Decision.ASK
    )  # rm in the workspace: an edit
    assert g.decide("bash", {"command": "eval $X"}, ToolKind.EXEC).facts.protected


# --- path checks against their plain definitions ------------------------------------------

_NAMES = st.lists(
    st.sampled_from(
        [
            *(".env", ".", "env", "pem", "key", "id_rsa", "credentials", "secrets", ".json"),
            *(".pub", "x", "\n", ".ssh", ".git", "example", ".npmrc", "_", "*", "[", "a"),
            *("known_hosts", ".metis", ".claude", "settings", ".bashrc", ".gitconfig"),
            *("worktrees", ".config", "git", ".mcp.json", ".envrc", ".husky"),
        ]
    ),
    max_size=4,
).map("".join)


def _plain_is_secret(path: Path) -> bool:
    name = path.name
    if any(fnmatch.fnmatchcase(name, p) for p in _NOT_SECRET):
        return False
    if any(fnmatch.fnmatchcase(name, p) for p in SECRET_PATTERNS):
        return True
    return ".ssh" in path.parts and not name.endswith(".pub") and name != "known_hosts"


def _plain_is_protected(path: Path) -> bool:
    """A protected folder anywhere on the path (but inside `.claude/worktrees/`),
    `.config/git`, or a protected file name."""
    parts = path.parts
    for i, part in enumerate(parts):
        in_worktree = parts[i + 1 : i + 2] == ("worktrees",) and len(parts) > i + 2
        if part in PROTECTED_DIRS and not (part == ".claude" and in_worktree):
            return True
        if parts[i : i + 2] == (".config", "git"):
            return True
    return path.name in PROTECTED_FILES


@given(st.lists(_NAMES, min_size=1, max_size=4))
def test_is_secret_and_is_protected_as_defined(segments: list[str]) -> None:
    path = Path("/w", *(s for s in segments if s and s not in (".", "..")))
    assert is_secret(path) == _plain_is_secret(path)
    assert is_protected(path) == _plain_is_protected(path)


_SEGMENTS = st.lists(st.sampled_from(["a", "b", "ab", "", ".", "..", "a b", "/"]), max_size=4)
_PURE = st.builds(
    lambda absolute, segs: PurePosixPath(("/" if absolute else "") + "/".join(segs) or "."),
    st.booleans(),
    _SEGMENTS,
)


@given(_PURE, st.lists(_PURE, max_size=3))
def test_is_within_as_defined(path: PurePosixPath, roots: list[PurePosixPath]) -> None:
    want = any(path == root or root in path.parents for root in roots)
    assert is_within(path, roots) == want  # type: ignore[arg-type]
