"""Differential test of the production gate against the model's reference
fact-deriver (AUTH-4, issue 23): Hypothesis draws settings (rules of every
behaviour and source, in Claude Code syntax, anchored at the workspace or a
settings folder), a mode, auto mode, and a call (a file tool on a labelled
path, or a Bash line built from simple commands, wrappers, assignments,
redirections and the documented operators). The call is decided by the real
`Gate` (nothing runs) and the deriver reads what a trace header would record
of that gate (`Gate.header_meta()`): wherever the deriver is sure, the gate's
facts must include what it derives.

The case count is in the README ("The reference fact-deriver").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_model._derive import derive
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

BASH_RULES = (
    "Bash",
    "Bash(rm:*)",
    "Bash(rm -rf *)",
    "Bash(rm -rf build)",
    "Bash(git push *)",
    "Bash(git push)",
    "Bash(git:*)",
    "Bash(curl *)",
    "Bash(npm run *)",
    "Bash(cat *)",
    "Bash(ls)",
    "Bash(echo hi)",
    "Bash(*install*)",
    "Bash(timeout *)",
    "Bash(nohup rm:*)",
)
PATH_RULES = (
    "Read",
    "Edit",
    "Write",
    "Grep",
    "Read(./.env)",
    "Read(.env)",
    "Read(*.pem)",
    "Read(**/*.key)",
    "Read(secrets/**)",
    "Read(//etc/**)",
    "Read(~/.ssh/**)",
    "Read(/config/*.json)",
    "Read(src)",
    "Edit(src/**)",
    "Edit(./docs/*.md)",
    "Edit(/src/**)",
    "Edit(.git/**)",
    "Edit(out.txt)",
    "Write(*.md)",
    "Glob(src/**)",
    "Read(offset:5)",
    "Edit(old_string:x)",
    "Bash(timeout:30)",
)
PATHS = (
    "src/a.py",
    "./src/a.py",
    "src",
    ".env",
    "src/.env",
    ".env.example",
    "secrets/k.txt",
    "config/x.json",
    "docs/a.md",
    "README.md",
    "src/../.git/config",
    ".git/config",
    ".claude/worktrees/w/x.py",
    ".metis/settings.json",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "../outside.txt",
    "x.pem",
    "k/id.key",
    "out.txt",
    "@WS@/src/b.py",
    "offset:5",
    "link.env",  # symlinks: the name and the file differ
    "outlink/passwd",
    "@ROOT@/alias/src/a.py",
)
BODIES = (
    "rm -rf build",
    "rm x",
    "/bin/rm -f a",
    "git push origin main",
    "git push",
    "git status",
    "curl http://example.com",
    "npm run test",
    "pip install foo",
    "cat .env",
    "cat src/a.py",
    "cat -n secrets/k.txt",
    "head -n 5 secrets/k.txt",
    "tail -3 x.pem",
    "ls",
    "ls src | xargs rm",
    "echo hi",
    "echo hi > out.txt",
    "echo x > .git/config",
    "echo x >> docs/a.md",
    "echo x > /dev/null",
    "echo x 2> .git/config",
    "cat <> docs/a.md",
    "uniq README.md out.txt",
    "ls | tee .git/config",
    "cd src",
    "echo $HOME",
    "ls *.py",
)
WRAPPERS: tuple[str, ...] = ("", "", "timeout 5 ", "nice -n 5 ", "nice ", "nohup ", "time ")
WRAPPERS += ("stdbuf -oL ", "command ", "FOO=1 ", "LANG=C ")
OPERATORS = (" && ", " || ", "; ", " | ", " & ", "\n")

_TOOL_KINDS = {
    "read": ToolKind.READ_ONLY,
    "grep": ToolKind.READ_ONLY,
    "glob": ToolKind.READ_ONLY,
    "ls": ToolKind.READ_ONLY,
    "write": ToolKind.EDIT,
    "edit": ToolKind.EDIT,
}

_rule = st.tuples(
    st.sampled_from(BASH_RULES + PATH_RULES),
    st.sampled_from(list(RuleBehavior)),
    st.sampled_from([Source.POLICY, Source.CLI, Source.SESSION, Source.PROJECT]),
    st.booleans(),  # anchored at a settings folder (`/x`), else the workspace
)
_command = st.builds(lambda w, b: w + b, st.sampled_from(WRAPPERS), st.sampled_from(BODIES))


@st.composite
def _line(draw: st.DrawFn) -> str:
    parts: list[str] = draw(st.lists(_command, min_size=1, max_size=3))
    out = parts[0]
    for p in parts[1:]:
        out += draw(st.sampled_from(OPERATORS)) + p
    return out


_call = st.one_of(
    st.tuples(st.just("bash"), _line()),
    st.tuples(st.sampled_from(sorted(_TOOL_KINDS)), st.sampled_from((*PATHS, None))),
)

# How many cases ran, and on how many the deriver was sure of a fact.
COUNTS = {"cases": 0, "sure": 0}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = Path(os.path.realpath(tmp_path_factory.mktemp("derive")))
    ws, conf = root / "ws", root / "ws" / "settings"
    conf.mkdir(parents=True)
    (ws / "notes.txt").write_text("n")
    (ws / "link.env").symlink_to(ws / "notes.txt")
    (ws / "outlink").symlink_to("/etc")
    (root / "alias").symlink_to(ws)
    return ws, conf


def _gate(
    ws: Path,
    conf: Path,
    rules: list[tuple[str, RuleBehavior, Source, bool]],
    mode: Mode,
    auto: bool,
) -> Gate:
    policy = Policy()
    for text, behavior, source, at_conf in rules:
        policy.add(source, behavior, text, base=conf if at_conf else None)
    return Gate(policy, mode, ws, Route.HEADLESS, auto=auto)


def _decide(
    gate: Gate, ws: Path, tool: str, arg: str | None
) -> tuple[dict[str, Any], Any, set[str]]:
    """The call's input, the gate's decision, and the footprint the tool
    would record (its resolved path, as `resolve_path` makes it)."""
    if tool == "bash":
        assert arg is not None
        decision = gate.decide("bash", {"command": arg}, ToolKind.EXEC, (), arg)
        return {"command": arg}, decision, set()
    if arg is None:
        if tool not in ("ls", "glob", "grep"):
            arg = "src"
        else:
            decision = gate.decide(tool, {}, _TOOL_KINDS[tool], (ws,))
            return {}, decision, {str(ws)}
    raw = arg.replace("@WS@", str(ws)).replace("@ROOT@", str(ws.parent))
    resolved = Path(os.path.realpath(os.path.join(ws, raw)))
    decision = gate.decide(tool, {"path": raw}, _TOOL_KINDS[tool], (resolved,))
    return {"path": raw}, decision, {str(resolved)}


def _check(world: tuple[Path, Path], rules: Any, mode: Mode, auto: bool, call: Any) -> None:
    ws, conf = world
    gate = _gate(ws, conf, rules, mode, auto)
    recorded = recorded_permissions(
        TraceHeader(run_id="d", root_run_id="d", meta={"permissions": gate.header_meta()})
    )
    assert recorded is not None
    tool, arg = call
    input, decision, footprint = _decide(gate, ws, tool, arg)
    sure, problem = facts_problem(recorded, tool, input, decision.facts, footprint)
    COUNTS["cases"] += 1
    COUNTS["sure"] += sure
    assert problem is None, (problem, derive(recorded, tool, input, footprint), decision.facts)


@settings(
    max_examples=1500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rules=st.lists(_rule, max_size=6),
    mode=st.sampled_from([Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.BYPASS, Mode.PLAN, Mode.DONT_ASK]),
    auto=st.booleans(),
    call=_call,
)
def test_the_gates_facts_include_the_derivers(
    world: tuple[Path, Path], rules: Any, mode: Mode, auto: bool, call: Any
) -> None:
    _check(world, rules, mode, auto, call)


def test_the_differential_test_was_sure_often_enough() -> None:
    """Runs after the property (file order): a test whose deriver is never
    sure would check nothing."""
    if COUNTS["cases"] == 0:
        pytest.skip("run with the property test")
    print(f"differential: {COUNTS}")
    assert COUNTS["sure"] >= COUNTS["cases"] // 4, COUNTS


# A gate that forgets: each fault, patched into the production gate, and a
# call on which the deriver is sure; the property above must then fail.
_FAULTS = {
    "protected path": (
        "metis_runtime.permissions._gate.is_protected",
        lambda *a, **k: False,
        [],
        ("write", ".git/config"),
    ),
    "secret": (
        "metis_runtime.permissions._gate.is_secret",
        lambda *a, **k: False,
        [],
        ("read", ".env"),
    ),
    "scope": (
        "metis_runtime.permissions._gate.is_within",
        lambda *a, **k: True,
        [],
        ("read", "/etc/passwd"),
    ),
    "a file rule": (
        "metis_runtime.permissions._gate.path_matches",
        lambda *a, **k: False,
        [("Read(.env)", RuleBehavior.DENY, Source.PROJECT, False)],
        ("read", "src/.env"),
    ),
    "a Bash deny rule": (
        "metis_runtime.permissions._shellgate.bash_matches",
        lambda *a, **k: False,
        [("Bash(rm:*)", RuleBehavior.DENY, Source.POLICY, False)],
        ("bash", "ls && timeout 5 rm -rf build"),
    ),
    "a redirect onto a protected path": (
        "metis_runtime.permissions._shellgate.is_protected",
        lambda *a, **k: False,
        [],
        ("bash", "echo x > .git/config"),
    ),
}


@pytest.mark.parametrize("fault", sorted(_FAULTS))
def test_a_gate_that_forgets_is_caught(
    world: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    target, fake, rules, call = _FAULTS[fault]
    _check(world, rules, Mode.DEFAULT, False, call)  # the real gate agrees
    monkeypatch.setattr(target, fake)
    with pytest.raises(AssertionError):
        _check(world, rules, Mode.DEFAULT, False, call)
