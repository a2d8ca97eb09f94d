"""Child authority in the runtime: surface, mode, cloned gate, hooks (CHILD-1..3, 6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_check import check_trace
from metis_model import ChildRefusal
from metis_model import child_authority
from metis_runtime.agents import PLAN_LOCKED_REMOVED
from metis_runtime.agents import GateConfig
from metis_runtime.agents import Hook
from metis_runtime.agents import HookedGate
from metis_runtime.agents import HookSpec
from metis_runtime.agents import build_gate
from metis_runtime.agents import child_mode
from metis_runtime.agents import child_surface
from metis_runtime.agents import clone_gate_config
from metis_runtime.agents import load_hooks
from metis_runtime.dispatch import PassThroughGate
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import Refusal
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

from ._support import make_root
from ._support import read_tree
from ._support import tree_report

HOOK = str(Path(__file__).with_name("hook_deny_rm.sh"))
TOOLS = ["read", "edit", "bash", "spawn_agent", "exit_plan_mode", "set_mode", "grep"]
tool_sets = st.lists(st.sampled_from(TOOLS), unique=True)


@given(
    st.sampled_from(Mode),
    st.none() | st.sampled_from(Mode),
    tool_sets,
    st.none() | tool_sets,
    st.none() | tool_sets,
    st.lists(tool_sets, max_size=2),
)
def test_child1_to_3_surface_and_mode_equal_the_model(
    parent, requested, visible, profile, callsite, denies
) -> None:  # type: ignore[no-untyped-def]
    want = child_authority(parent, visible, requested, profile, callsite, denies)
    mode = child_mode(parent, requested)
    if isinstance(want, ChildRefusal):
        assert isinstance(mode, Refusal)
        return
    assert mode == want.mode
    assert child_surface(visible, profile, callsite, denies, mode=mode) == want.tools
    if mode is Mode.PLAN:
        assert not want.tools & PLAN_LOCKED_REMOVED


def _gate(tmp: Path, mode: Mode, *rules: tuple[str, str]) -> Gate:
    policy = Policy()
    for behavior, pattern in rules:
        policy.add(Source.PROJECT, behavior, pattern, base=tmp)  # type: ignore[arg-type]
    return Gate(policy, mode, tmp, Route.HEADLESS)


def test_the_cloned_gate_is_never_more_permissive(tmp_path: Path) -> None:
    default = _gate(tmp_path, Mode.DEFAULT)
    for mode in (Mode.ACCEPT_EDITS, Mode.BYPASS):
        refused = clone_gate_config(
            default,
            mode,
            parent_workspace=tmp_path,
            child_workspace=tmp_path,
            headless_default=Decision.DENY,
        )
        assert isinstance(refused, Refusal)
    plan = _gate(tmp_path, Mode.PLAN)
    cfg = clone_gate_config(
        plan,
        Mode.BYPASS,
        parent_workspace=tmp_path,
        child_workspace=tmp_path,
        headless_default=Decision.DENY,
    )
    assert isinstance(cfg, GateConfig) and cfg.mode is Mode.PLAN
    passthrough = PassThroughGate(Mode.DEFAULT, tmp_path)
    assert isinstance(
        clone_gate_config(
            passthrough,
            Mode.BYPASS,
            parent_workspace=tmp_path,
            child_workspace=tmp_path,
            headless_default=Decision.DENY,
        ),
        Refusal,
    )


def test_rules_anchored_at_the_parent_follow_the_child_into_its_worktree(tmp_path: Path) -> None:
    parent_ws, child_ws = tmp_path / "parent", tmp_path / "child"
    parent_ws.mkdir()
    child_ws.mkdir()
    parent = _gate(
        parent_ws, Mode.ACCEPT_EDITS, ("deny", "Write(release/**)"), ("allow", "Bash(git status)")
    )
    cfg = clone_gate_config(
        parent,
        None,
        parent_workspace=parent_ws,
        child_workspace=child_ws,
        headless_default=Decision.DENY,
        extra_deny=("Bash(rm:*)",),
    )
    assert isinstance(cfg, GateConfig)
    child = build_gate(cfg, child_ws)
    target = child_ws / "release" / "VERSION"
    d = child.decide("write", {"path": str(target)}, ToolKind.EDIT, [target], None)
    assert (
        d.decision is Decision.DENY and d.rule is not None and d.rule.pattern == "Write(release/**)"
    )
    ok = child.decide("write", {"path": "src.py"}, ToolKind.EDIT, [child_ws / "src.py"], None)
    assert ok.decision is Decision.ALLOW  # acceptEdits carried over
    rm = child.decide("bash", {"command": "rm -rf x"}, ToolKind.EXEC, [], "rm -rf x")
    assert rm.decision is Decision.DENY
    assert child.route is Route.HEADLESS


# --- hooks ----------------------------------------------------------------------


def test_a_command_hook_vetoes_with_exit_2_and_fails_closed(tmp_path: Path) -> None:
    (deny_rm,) = load_hooks([HookSpec(id="no-rm", command=HOOK)])
    assert deny_rm.run("bash", {"command": "rm x"}, {}).vetoed
    assert not deny_rm.run("bash", {"command": "ls"}, {}).vetoed
    broken = Hook(HookSpec(id="broken", command="exit 1"))
    assert broken.run("bash", {"command": "ls"}, {}).vetoed
    blocker = Hook(
        HookSpec(id="json", command='echo \'{"decision": "block", "reason": "json says no"}\'')
    )
    verdict = blocker.run("read", {}, {})
    assert verdict.vetoed and verdict.reason == "json says no"
    slow = Hook(HookSpec(id="slow", command="sleep 5", timeout_s=0.2))
    assert slow.run("read", {}, {}).vetoed


@pytest.mark.parametrize(
    ("stdout", "vetoed", "says"),
    [
        ("looks fine to me", False, ""),  # plain text: no decision
        ('{"decision": "approve"}', False, ""),
        ('{"decision": "block"', True, "not valid JSON"),  # cut short: fails closed
        ('{"decision": "block", "decision": "allow"}', True, "duplicate key"),  # json.loads: allow
        ('{"decision": "block", "reason": NaN}', True, "NaN"),
    ],
)
def test_a_hooks_stdout_is_read_strictly(stdout: str, vetoed: bool, says: str) -> None:
    verdict = Hook(HookSpec(id="json", command=f"printf '%s' '{stdout}'")).run("read", {}, {})
    assert verdict.vetoed is vetoed, verdict
    assert says in verdict.reason


def test_a_hook_that_prints_without_end_is_bounded_and_vetoes() -> None:
    from metis_runtime.agents._hooks import HOOK_OUTPUT_BYTES

    count = HOOK_OUTPUT_BYTES // 4096 + 2
    flood = Hook(HookSpec(id="flood", command=f"head -c 4096 /dev/zero | tr '\\0' x; "
                          f"for i in $(seq {count}); do head -c 4096 /dev/zero; done"))  # fmt: skip
    verdict = flood.run("read", {}, {})
    assert verdict.vetoed and f"over {HOOK_OUTPUT_BYTES} bytes" in verdict.reason


def test_a_callable_hook_and_its_matcher(tmp_path: Path) -> None:
    (hook,) = load_hooks(
        [HookSpec(id="secrets", callable="tests.agents._scripts:veto_secret_paths", matcher="re*")]
    )
    assert hook.matches("read") and not hook.matches("write")
    assert (
        hook.run("read", {"path": "my_secret.txt"}, {}).reason
        == "paths with 'secret' are off limits"
    )
    with pytest.raises(ValueError, match="module:attribute"):
        HookSpec(id="x", callable="nocolon")
    with pytest.raises(ValueError, match="exactly one"):
        HookSpec(id="x")
    with pytest.raises(ValueError, match="cannot import"):
        load_hooks([HookSpec(id="x", callable="no.such.module:f")])


def test_a_veto_is_a_deny_that_recomputes_from_its_facts(tmp_path: Path) -> None:
    gate = HookedGate(
        _gate(tmp_path, Mode.BYPASS), load_hooks([HookSpec(id="no-rm", command=HOOK)])
    )
    d = gate.decide("bash", {"command": "rm x"}, ToolKind.EXEC, [], "rm x")
    assert d.decision is Decision.DENY and d.stage.value == "deny_rule"
    assert (
        d.rule is not None
        and d.rule.pattern == "hook:no-rm"
        and d.rule.behavior is RuleBehavior.DENY
    )
    assert any(r.pattern == "hook:no-rm" for r in d.facts.rules)
    assert gate.mode is Mode.BYPASS  # the inner gate's attributes show through


@pytest.mark.slow
def test_child6_a_parent_hook_applies_in_every_descendant(tmp_path: Path) -> None:
    def script(request, n):  # type: ignore[no-untyped-def]
        from metis_runtime.providers import TextBlock
        from metis_runtime.providers import ToolUseBlock

        if n == 0:
            return [
                ToolUseBlock("r1", "bash", {"command": "rm -f victim.txt"}),
                ToolUseBlock("r2", "spawn_agent", {"agent": "hooked", "task": "delete at depth 1"}),
            ]
        return [TextBlock("done")]

    ws = tmp_path / "ws"
    (ws / ".metis" / "agents").mkdir(parents=True)
    # A project definition: every descendant looks it up in the root's project.
    (ws / ".metis" / "agents" / "hooked.md").write_text(
        "---\nname: hooked\ndescription: tries to rm\ntools: [bash, spawn_agent]\n---\nrm\n"
    )
    (ws / "victim.txt").write_text("still here\n")
    root = make_root(
        tmp_path,
        script,
        workspace=ws,
        mode=Mode.BYPASS,  # without the hook, rm would be allowed
        hooks=[HookSpec(id="no-rm", command=HOOK, matcher="bash")],
    )
    result = root.run("try to delete")
    assert result.status.value == "completed"
    assert (ws / "victim.txt").read_text() == "still here\n"
    tree = read_tree(root.run_dir)
    depths = sorted(h.depth for h, _ in tree.values())
    assert depths == [0, 1, 2]
    for header, events in tree.values():
        assert [h.id for h in header.hooks] == ["no-rm"]
        assert check_trace(events, header).ok
        denials = [
            e
            for e in events
            if e.kind == "decision" and e.rule is not None and e.rule.pattern == "hook:no-rm"
        ]
        assert len(denials) == 1, header.agent_id
    report = tree_report(root.run_dir)
    # Checked: each hook's run, each decision it covers, each child's inheritance.
    runs = sum(e.kind == "hook" for _, events in tree.values() for e in events)
    covered = sum(
        e.kind == "decision" and e.occ in bash
        for _, events in tree.values()
        for bash in [
            {c.occ for a in events if a.kind == "assistant" for c in a.calls if c.tool == "bash"}
        ]
        for e in events
    )
    assert runs == 3 and covered == 3  # one rm per agent, each vetoed
    assert report.ok and report.checks["CHILD-6"] == runs + covered + 2


def test_hook_specs_round_trip_through_json() -> None:
    spec = HookSpec(id="no-rm", command=HOOK, matcher="bash")
    assert HookSpec.model_validate(json.loads(spec.model_dump_json())) == spec
    asyncio.run(asyncio.sleep(0))


# --- the mode a spawn asked for (CHILD-2, mutant 21) -------------------------------


def _spawn_asking(tmp_path: Path, asked: Mode) -> tuple[list[Any], Any]:
    """A default root that spawns `helper` asking for `asked`: its spawn
    results and the tree's report."""
    from metis_runtime.agents import AgentDefinition
    from metis_runtime.providers import TextBlock
    from metis_runtime.providers import ToolUseBlock

    def script(request, n):  # type: ignore[no-untyped-def]
        if n == 0:
            spawn = {"agent": "helper", "task": "look", "permission_mode": asked.value}
            return [ToolUseBlock("s1", "spawn_agent", spawn)]
        return [TextBlock("done")]

    helper = AgentDefinition(name="helper", description="h", tools=("read",), system_prompt="h")
    root = make_root(tmp_path, script, extra_definitions=[helper])
    assert root.run("spawn one").status.value == "completed"
    (events,) = [ev for h, ev in read_tree(root.run_dir).values() if h.depth == 0]
    return [e for e in events if e.kind in ("spawn", "result")], tree_report(root.run_dir)


def test_child2_the_spawn_records_the_mode_asked_for(tmp_path: Path) -> None:
    got, report = _spawn_asking(tmp_path, Mode.PLAN)
    (spawn,) = [e for e in got if e.kind == "spawn"]
    assert (spawn.requested_mode, spawn.child_mode, spawn.parent_mode) == (
        Mode.PLAN,
        Mode.PLAN,
        Mode.DEFAULT,
    )
    assert report.ok, report.first
    got, report = _spawn_asking(tmp_path / "escalates", Mode.BYPASS)
    assert [e.kind for e in got] == ["result"] and "spawn refused: AUTHORITY" in got[0].content
    assert report.ok, report.first


@pytest.mark.metis_nonconforming
def test_child2_a_gate_that_admits_an_escalating_request_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutant 21's first half: the clone admits any mode; the child's gate then
    caps it at the parent's live, so only the recorded request shows it."""
    original = Gate.clone_for_child

    def admits_anything(self, mode=None, extra_deny=()):  # type: ignore[no-untyped-def]
        clone = original(self, None, extra_deny)
        if mode is not None and isinstance(clone, Gate):
            clone._mode = Mode(mode)
        return clone

    monkeypatch.setattr(Gate, "clone_for_child", admits_anything)
    got, report = _spawn_asking(tmp_path, Mode.BYPASS)
    (spawn,) = [e for e in got if e.kind == "spawn"]
    assert spawn.child_mode is Mode.DEFAULT  # capped: the child itself does no harm
    assert report.first is not None and report.first.invariant == "CHILD-2", report.first
    assert "asked for bypassPermissions was started under a default parent" in report.first.message


# --- the child's gate keeps its parent's rules (CHILD-2, AUTH-4: issue 23) ----------


def _spawn_with_deny(tmp_path: Path) -> Any:
    from metis_runtime.agents import AgentDefinition
    from metis_runtime.providers import TextBlock
    from metis_runtime.providers import ToolUseBlock

    def script(request, n):  # type: ignore[no-untyped-def]
        if n == 0:
            return [ToolUseBlock("s1", "spawn_agent", {"agent": "helper", "task": "look"})]
        return [TextBlock("done")]

    helper = AgentDefinition(name="helper", description="h", tools=("read",), system_prompt="h")
    root = make_root(
        tmp_path, script, extra_definitions=[helper], deny=("Bash(rm:*)", "Read(.env)")
    )
    assert root.run("spawn one").status.value == "completed"
    return root


def test_child2_the_child_header_records_a_gate_that_keeps_the_parents_denies(
    tmp_path: Path,
) -> None:
    root = _spawn_with_deny(tmp_path)
    headers = [h for h, _ in read_tree(root.run_dir).values()]
    patterns = {
        h.depth: {r["pattern"] for r in h.meta["permissions"]["rules"] if r["behavior"] == "deny"}
        for h in headers
    }
    assert {"Bash(rm:*)", "Read(.env)"} <= patterns[1] and patterns[0] <= patterns[1]
    report = tree_report(root.run_dir)
    assert report.ok and report.checks.get("CHILD-2"), report.first


@pytest.mark.metis_nonconforming
def test_child2_a_child_gate_built_fresh_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child gate built fresh instead of cloned: the parent's deny rules
    are gone from the child's header, and the tree breaks CHILD-2."""

    def fresh(*args, **kwargs):  # type: ignore[no-untyped-def]
        cfg = clone_gate_config(*args, **kwargs)
        if isinstance(cfg, GateConfig):
            cfg = cfg.model_copy(update={"rules": ()})
        return cfg

    monkeypatch.setattr("metis_runtime.agents._supervisor_state.clone_gate_config", fresh)
    report = tree_report(_spawn_with_deny(tmp_path).run_dir)
    assert report.first is not None and report.first.invariant == "CHILD-2", report.first
    assert "deny Bash(rm:*)" in report.first.message
