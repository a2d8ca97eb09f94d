"""The gate: the staged order, bypass shapes, bypass-immune checks, scope,
children, transitions, and properties over generated calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import metis_runtime.permissions as perms
from metis_model import resolve as model_resolve
from metis_runtime._errors import ConfigError
from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Policy
from metis_runtime.permissions import Refusal
from metis_runtime.permissions import staged_decision
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind

DENY, ASK, ALLOW = RuleBehavior.DENY, RuleBehavior.ASK, RuleBehavior.ALLOW


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    return Path(os.path.realpath(root))


def policy(*rules: tuple[Source, RuleBehavior, str]) -> Policy:
    p = Policy()
    for source, behavior, pattern in rules:
        p.add(source, behavior, pattern)
    return p


def gate(p: Policy, mode: Mode, ws: Path) -> Gate:
    return Gate(p, mode, ws, Route.HEADLESS)


def sh(g: Gate, command: str, kind: ToolKind = ToolKind.EXEC) -> GateDecision:
    return g.decide("bash", {"command": command}, kind)


def test_exports() -> None:
    # Which names are exported is checked against the lazy table and the
    # TYPE_CHECKING imports in tests/test_architecture.py; here, that each loads.
    assert {"Gate", "Policy", "staged_decision"} <= set(perms.__all__)
    for name in perms.__all__:
        assert getattr(perms, name) is not None


# --- the bypass corpus: tests/runtime/test_permissions_corpus.py ----------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "timeout 5 rm x",
        "bash -c 'rm x'",
        "ls | xargs rm",
        "echo $(rm x)",
        "sudo rm x",
        "/bin/rm x",
        "find . -exec rm {} \\;",
    ],
)
def test_visible_rm_is_denied_by_rule(command: str, ws: Path) -> None:
    p = policy((Source.PROJECT, DENY, "Bash(rm:*)"), (Source.POLICY, ALLOW, "Bash"))
    d = sh(gate(p, Mode.BYPASS, ws), command)
    assert d.decision is Decision.DENY
    assert d.stage is Stage.DENY_RULE
    assert d.rule is not None and d.rule.pattern == "Bash(rm:*)"


@pytest.mark.parametrize("mode", list(Mode))
def test_opaque_is_at_best_ask(mode: Mode, ws: Path) -> None:
    p = policy((Source.POLICY, ALLOW, "Bash"), (Source.POLICY, ALLOW, "Bash(eval:*)"))
    d = sh(gate(p, mode, ws), "eval $X")
    assert d.decision is not Decision.ALLOW
    assert d.facts.protected
    assert "eval of run-time text" in d.detail
    if mode is not Mode.PLAN:
        assert d.stage is Stage.BYPASS_IMMUNE


# --- compound commands --------------------------------------------------------------


def test_compound_allowed_only_if_every_part_is(ws: Path) -> None:
    p = policy((Source.PROJECT, ALLOW, "Bash(git status:*)"), (Source.PROJECT, ALLOW, "Bash(ls)"))
    g = gate(p, Mode.DEFAULT, ws)
    d = sh(g, "git status && ls")
    assert d.decision is Decision.ALLOW
    assert {r.pattern for r in d.facts.rules} == {"Bash(git status:*)", "Bash(ls)"}
    d = sh(g, "git status && git push")
    assert d.decision is Decision.ASK
    assert d.stage is Stage.MODE
    assert d.facts.rules == ()  # the partial allow is not recorded


def test_compound_records_every_deny_and_ask(ws: Path) -> None:
    p = policy(
        (Source.PROJECT, DENY, "Bash(rm:*)"),
        (Source.CLI, DENY, "Bash(curl:*)"),
        (Source.PROJECT, ASK, "Bash(git push:*)"),
        (Source.PROJECT, ALLOW, "Bash"),
    )
    d = sh(gate(p, Mode.DEFAULT, ws), "rm x; curl y; git push")
    assert {(r.behavior, r.pattern) for r in d.facts.rules} == {
        (DENY, "Bash(rm:*)"),
        (DENY, "Bash(curl:*)"),
        (ASK, "Bash(git push:*)"),
        (ALLOW, "Bash"),  # it matched every part
    }
    assert d.rule is not None and d.rule.pattern == "Bash(curl:*)"  # cli outranks project


def test_bash_c_is_not_a_stripped_wrapper(ws: Path) -> None:
    # Claude Code strips only timeout, time, nice, nohup, stdbuf, command,
    # builtin, noglob and bare xargs: `Bash(ls:*)` does not allow `bash -c 'ls'`
    # with anything else in it, but a read-only inner command needs no rule.
    p = policy((Source.PROJECT, ALLOW, "Bash(ls:*)"))
    g = gate(p, Mode.DEFAULT, ws)
    assert sh(g, "bash -c 'ls -la'", ToolKind.READ_ONLY).decision is Decision.ALLOW
    assert sh(g, "bash -c 'ls -la && npm test'").decision is Decision.ASK
    assert sh(g, "timeout 5 ls -la && nice ls").decision is Decision.ALLOW
    p.add(Source.PROJECT, DENY, "Bash(bash:*)")
    assert sh(gate(p, Mode.DEFAULT, ws), "bash -c 'ls -la'").decision is Decision.DENY


def test_read_only_bash_declared_exec_stays_exec(ws: Path) -> None:
    g = gate(Policy(), Mode.ACCEPT_EDITS, ws)
    assert sh(g, "ls", ToolKind.EXEC).decision is Decision.ASK
    assert sh(g, "ls", ToolKind.READ_ONLY).decision is Decision.ALLOW
    d = sh(g, "ls; rm x", ToolKind.READ_ONLY)
    # not read-only; an in-workspace `rm` is a file edit acceptEdits approves
    assert d.facts.kind is ToolKind.EDIT
    assert d.decision is Decision.ALLOW
    d = sh(g, "ls; curl x", ToolKind.READ_ONLY)
    assert (d.facts.kind, d.decision) == (ToolKind.EXEC, Decision.ASK)


# --- the staged order, stage by stage ------------------------------------------------


def test_stage_transition(ws: Path) -> None:
    g = gate(policy((Source.POLICY, ALLOW, "Read")), Mode.BYPASS, ws)
    g.begin_transition()
    d = g.decide("read", {}, ToolKind.READ_ONLY, ["src/a"])
    assert (d.decision, d.stage, d.facts.transition) == (Decision.DENY, Stage.TRANSITION, True)
    assert g.complete_transition(Mode.DEFAULT) is None
    assert g.mode is Mode.DEFAULT
    assert g.decide("read", {}, ToolKind.READ_ONLY, ["src/a"]).decision is Decision.ALLOW


def test_stage_plan(ws: Path) -> None:
    g = gate(policy((Source.POLICY, ALLOW, "Edit")), Mode.PLAN, ws)
    d = g.decide("edit", {}, ToolKind.EDIT, ["src/a"])
    assert (d.decision, d.stage) == (Decision.DENY, Stage.PLAN)
    assert g.decide("read", {}, ToolKind.READ_ONLY, ["src/a"]).decision is Decision.ALLOW
    assert g.decide("exit_plan", {}, ToolKind.PLAN_CONTROL).decision is Decision.ALLOW


def test_stage_deny_rule_authority_then_recency(ws: Path) -> None:
    p = policy(
        (Source.PERSISTED, DENY, "Edit(src/**)"),
        (Source.PROJECT, DENY, "Edit(src/a)"),
        (Source.PROJECT, DENY, "Edit"),
        (Source.POLICY, ALLOW, "Edit"),
    )
    d = gate(p, Mode.BYPASS, ws).decide("edit", {}, ToolKind.EDIT, ["src/a"])
    assert d.stage is Stage.DENY_RULE
    assert d.rule == RuleRef(behavior=DENY, source=Source.PROJECT, pattern="Edit", recency=3)
    assert len(d.facts.rules) == 4


def test_stage_ask_rule(ws: Path) -> None:
    p = policy((Source.PROJECT, ASK, "Bash(git push:*)"), (Source.POLICY, ALLOW, "Bash"))
    assert sh(gate(p, Mode.BYPASS, ws), "git push").decision is Decision.ASK
    d = sh(gate(p, Mode.DONT_ASK, ws), "git push")
    assert (d.decision, d.stage) == (Decision.DENY, Stage.ASK_RULE)


@pytest.mark.parametrize(
    ("tool", "kind", "path"),
    [
        ("edit", ToolKind.EDIT, ".git/config"),
        ("edit", ToolKind.EDIT, "src/../.git/hooks/pre-commit"),
        ("write", ToolKind.EDIT, "~/.bashrc"),
        ("write", ToolKind.EDIT, "~/.zshrc"),
        ("write", ToolKind.EDIT, "~/.profile"),
        ("edit", ToolKind.EDIT, "~/.ssh/authorized_keys"),
        ("edit", ToolKind.EDIT, ".metis/settings.json"),
        ("edit", ToolKind.EDIT, ".metis/settings.local.json"),
        ("edit", ToolKind.EDIT, ".claude/settings.json"),
        ("read", ToolKind.READ_ONLY, ".env"),
        ("read", ToolKind.READ_ONLY, "config/.env.production"),
        ("read", ToolKind.READ_ONLY, "certs/server.pem"),
        ("read", ToolKind.READ_ONLY, "~/.ssh/id_rsa"),
        ("read", ToolKind.READ_ONLY, "deploy/credentials.json"),
        ("read", ToolKind.READ_ONLY, "tls/server.key"),
    ],
)
@pytest.mark.parametrize("mode", [Mode.BYPASS, Mode.ACCEPT_EDITS, Mode.DEFAULT])
def test_stage_bypass_immune_even_with_allow(
    tool: str, kind: ToolKind, path: str, mode: Mode, ws: Path
) -> None:
    p = policy((Source.POLICY, ALLOW, "Edit"), (Source.POLICY, ALLOW, "Read"))
    d = Gate(p, mode, ws, Route.HEADLESS, additional_directories=["~"]).decide(
        tool, {}, kind, [path]
    )
    assert (d.decision, d.stage) == (Decision.ASK, Stage.BYPASS_IMMUNE)


@pytest.mark.parametrize("path", [".env.example", "src/a.py", ".gitignore", "id_rsa.pub"])
def test_not_secret(path: str, ws: Path) -> None:
    d = gate(Policy(), Mode.DEFAULT, ws).decide("read", {}, ToolKind.READ_ONLY, [path])
    assert d.decision is Decision.ALLOW
    assert not d.facts.secret


def test_reading_git_dir_is_not_protected(ws: Path) -> None:
    d = gate(Policy(), Mode.DEFAULT, ws).decide("read", {}, ToolKind.READ_ONLY, [".git/HEAD"])
    assert d.decision is Decision.ALLOW


@pytest.mark.parametrize(
    ("command", "fact"),
    [
        ("cat .env", "secret"),
        ("grep -r key --include=x ~/.ssh/id_rsa", "secret"),
        ("sort < .env", "secret"),
        ("echo 'alias ls=rm' >> ~/.bashrc", "protected"),
        ("rm -rf .git", "protected"),
        ("cp evil .metis/settings.json", "protected"),
        ("sed -i s/a/b/ .git/config", "protected"),
    ],
)
def test_shell_words_feed_bypass_immune(command: str, fact: str, ws: Path) -> None:
    d = sh(gate(policy((Source.POLICY, ALLOW, "Bash")), Mode.BYPASS, ws), command)
    assert getattr(d.facts, fact)
    assert (d.decision, d.stage) == (Decision.ASK, Stage.BYPASS_IMMUNE)


def test_stage_allow_rule(ws: Path) -> None:
    p = policy((Source.PROJECT, ALLOW, "Edit(src/**)"))
    d = gate(p, Mode.DEFAULT, ws).decide("edit", {}, ToolKind.EDIT, ["src/a.py"])
    assert (d.decision, d.stage) == (Decision.ALLOW, Stage.ALLOW_RULE)
    # Every path must be covered for an allow to count.
    d = gate(p, Mode.DEFAULT, ws).decide("edit", {}, ToolKind.EDIT, ["src/a.py", "b.py"])
    assert (d.decision, d.stage, d.facts.rules) == (Decision.ASK, Stage.MODE, ())


def test_stage_scope_and_symlinks(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    g = gate(Policy(), Mode.DEFAULT, ws)
    for path in ["link/file", "../outside/file", "src/../../outside/file", str(outside / "f")]:
        d = g.decide("read", {}, ToolKind.READ_ONLY, [path])
        assert (d.decision, d.stage, d.facts.in_scope) == (Decision.ASK, Stage.SCOPE, False), path
    assert (
        gate(Policy(), Mode.DONT_ASK, ws)
        .decide("read", {}, ToolKind.READ_ONLY, ["link/f"])
        .decision
        is Decision.DENY
    )
    wide = Gate(Policy(), Mode.DEFAULT, ws, Route.HEADLESS, additional_directories=[outside])
    assert wide.decide("read", {}, ToolKind.READ_ONLY, ["link/file"]).decision is Decision.ALLOW


def test_symlink_into_protected_dir(ws: Path, tmp_path: Path) -> None:
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    (ws / "notes").symlink_to(ssh)
    p = policy((Source.POLICY, ALLOW, "Edit"))
    d = Gate(p, Mode.BYPASS, ws, Route.HEADLESS, additional_directories=[tmp_path]).decide(
        "edit", {}, ToolKind.EDIT, ["notes/config"]
    )
    assert d.facts.protected
    assert d.decision is Decision.ASK


def test_additional_directories_from_settings(ws: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    settings = ws / ".metis" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"additionalDirectories": ["../shared"]}}')
    p = Policy()
    p.load(settings, Source.PROJECT)
    d = gate(p, Mode.DEFAULT, ws).decide("read", {}, ToolKind.READ_ONLY, [shared / "x"])
    assert d.facts.in_scope


def test_shell_scope(ws: Path) -> None:
    g = gate(Policy(), Mode.DEFAULT, ws)
    assert sh(g, "cat /etc/hostname", ToolKind.READ_ONLY).stage is Stage.SCOPE
    assert sh(g, "cat src/a", ToolKind.READ_ONLY).decision is Decision.ALLOW
    assert sh(g, "echo /etc/x", ToolKind.READ_ONLY).decision is Decision.ALLOW
    assert sh(g, "curl https://x.io/a").stage is Stage.MODE


@pytest.mark.parametrize(
    ("mode", "kind", "expected"),
    [
        (Mode.BYPASS, ToolKind.EXEC, Decision.ALLOW),
        (Mode.ACCEPT_EDITS, ToolKind.EDIT, Decision.ALLOW),
        (Mode.ACCEPT_EDITS, ToolKind.EXEC, Decision.ASK),
        (Mode.ACCEPT_EDITS, ToolKind.READ_ONLY, Decision.ALLOW),
        (Mode.DEFAULT, ToolKind.READ_ONLY, Decision.ALLOW),
        (Mode.DEFAULT, ToolKind.PLAN_CONTROL, Decision.ALLOW),
        (Mode.DEFAULT, ToolKind.EDIT, Decision.ASK),
        (Mode.DEFAULT, ToolKind.EXEC, Decision.ASK),
        (Mode.DONT_ASK, ToolKind.READ_ONLY, Decision.ALLOW),
        (Mode.DONT_ASK, ToolKind.EDIT, Decision.DENY),
        (Mode.DONT_ASK, ToolKind.EXEC, Decision.DENY),
        (Mode.PLAN, ToolKind.READ_ONLY, Decision.ALLOW),
        (Mode.PLAN, ToolKind.PLAN_CONTROL, Decision.ALLOW),
    ],
)
def test_stage_mode(mode: Mode, kind: ToolKind, expected: Decision, ws: Path) -> None:
    d = gate(Policy(), mode, ws).decide("sometool", {}, kind, ["src/a"])
    assert (d.decision, d.stage) == (expected, Stage.MODE)


def test_webfetch_and_mcp_rules(ws: Path) -> None:
    p = policy(
        (Source.PROJECT, ALLOW, "WebFetch(domain:docs.python.org)"),
        (Source.PROJECT, DENY, "WebFetch(domain:evil.io)"),
        (Source.PROJECT, ALLOW, "mcp__github"),
        (Source.PROJECT, DENY, "mcp__github__delete_repo"),
    )
    g = gate(p, Mode.DEFAULT, ws)
    fetch = ToolKind.EXEC
    assert (
        g.decide("webfetch", {"url": "https://docs.python.org/3/"}, fetch).decision
        is Decision.ALLOW
    )
    assert g.decide("webfetch", {"url": "https://evil.io/"}, fetch).decision is Decision.DENY
    assert g.decide("webfetch", {"url": 3}, fetch).decision is Decision.DENY  # unknown host
    assert g.decide("webfetch", {"url": "https://x.org/"}, fetch).decision is Decision.ASK
    assert g.decide("mcp__github__list", {}, fetch).decision is Decision.ALLOW
    assert g.decide("mcp__github__delete_repo", {}, fetch).decision is Decision.DENY
    assert g.decide("mcp__slack__post", {}, fetch).decision is Decision.ASK


def test_read_rules_cover_search_tools(ws: Path) -> None:
    p = policy((Source.PROJECT, DENY, "Read(./secret/**)"))
    g = gate(p, Mode.BYPASS, ws)
    for tool in ("read", "ls", "glob", "grep"):
        assert g.decide(tool, {}, ToolKind.READ_ONLY, ["secret/a"]).decision is Decision.DENY
    # A Read deny also blocks edits of the path (permissions docs, v2.1.208+).
    assert g.decide("edit", {}, ToolKind.EDIT, ["secret/a"]).decision is Decision.DENY
    assert g.decide("edit", {}, ToolKind.EDIT, ["public/a"]).decision is Decision.ALLOW


def test_settings_relative_rules_anchor_at_project_root(ws: Path) -> None:
    settings = ws / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"deny": ["Edit(/src/**)", "Read(./.env)"]}}')
    p = Policy()
    p.load(settings, Source.PROJECT)
    g = gate(p, Mode.BYPASS, ws)
    assert g.decide("edit", {}, ToolKind.EDIT, [ws / "src" / "a"]).decision is Decision.DENY
    assert g.decide("read", {}, ToolKind.READ_ONLY, [".env"]).stage is Stage.DENY_RULE


def test_decision_as_trace_event(ws: Path) -> None:
    d = sh(gate(policy((Source.PROJECT, DENY, "Bash(rm:*)")), Mode.DEFAULT, ws), "rm x")
    event = d.event(occ="1.0", seq=4, t=0.5, causes=[3])
    assert isinstance(event, DecisionEvent)
    assert (event.stage, event.rule, event.facts, event.route) == (
        "deny_rule",
        d.rule,
        d.facts,
        Route.HEADLESS,
    )


def test_bypass_can_be_disabled(ws: Path, tmp_path: Path) -> None:
    f = tmp_path / "managed.json"
    f.write_text('{"permissions": {"disableBypassPermissionsMode": "disable"}}')
    p = Policy()
    p.load(f, Source.POLICY)
    with pytest.raises(ConfigError, match="bypassPermissions"):
        Gate(p, Mode.BYPASS, ws, Route.HEADLESS)
    g = Gate(p, Mode.DEFAULT, ws, Route.HEADLESS)
    assert isinstance(g.complete_transition(Mode.BYPASS), Refusal)
    assert g.mode is Mode.DEFAULT


def test_gate_construction_errors(ws: Path) -> None:
    with pytest.raises(ConfigError, match="protocol"):
        Gate(Policy(), Mode.DEFAULT, ws, Route.PROTOCOL)
    with pytest.raises(ConfigError, match="child"):
        Gate(Policy(), Mode.DEFAULT, ws, Route.CHILD)
    with pytest.raises(ConfigError, match="headless_default"):
        Gate(Policy(), Mode.DEFAULT, ws, Route.HEADLESS, headless_default=Decision.ASK)


# --- children -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent", "requested", "expected"),
    [
        (Mode.PLAN, Mode.BYPASS, Mode.PLAN),
        (Mode.PLAN, None, Mode.PLAN),
        (Mode.DEFAULT, None, Mode.DEFAULT),
        (Mode.DEFAULT, Mode.PLAN, Mode.PLAN),
        (Mode.DEFAULT, Mode.DONT_ASK, Mode.DONT_ASK),
        (Mode.DEFAULT, Mode.ACCEPT_EDITS, None),
        (Mode.DEFAULT, Mode.BYPASS, None),
        (Mode.ACCEPT_EDITS, Mode.BYPASS, None),
        (Mode.ACCEPT_EDITS, Mode.DEFAULT, Mode.DEFAULT),
        (Mode.DONT_ASK, Mode.PLAN, None),
        (Mode.DONT_ASK, Mode.DEFAULT, None),
        (Mode.BYPASS, Mode.ACCEPT_EDITS, Mode.ACCEPT_EDITS),
    ],
)
def test_child_modes(parent: Mode, requested: Mode | None, expected: Mode | None, ws: Path) -> None:
    child = gate(Policy(), parent, ws).clone_for_child(mode=requested)
    if expected is None:
        assert isinstance(child, Refusal)
        assert child.current is parent
    else:
        assert isinstance(child, Gate)
        assert child.mode is expected
        assert child.route is Route.CHILD


def test_child_gets_extra_deny_and_parent_rules_live(ws: Path) -> None:
    p = policy((Source.PROJECT, ALLOW, "Bash"))
    parent = gate(p, Mode.DEFAULT, ws)
    child = parent.clone_for_child(extra_deny=["Bash(git push:*)"])
    assert isinstance(child, Gate)
    assert sh(child, "git push").decision is Decision.DENY
    assert sh(parent, "git push").decision is Decision.ALLOW
    p.add(Source.SESSION, DENY, "Bash(curl:*)")
    assert sh(child, "curl x").decision is Decision.DENY
    with pytest.raises(ConfigError, match=r"extra_deny\[0\]"):
        parent.clone_for_child(extra_deny=["Bash("])


def test_child_capped_by_parent_live(ws: Path) -> None:
    parent = gate(Policy(), Mode.BYPASS, ws)
    child = parent.clone_for_child(mode=Mode.ACCEPT_EDITS)
    assert isinstance(child, Gate)
    parent.begin_transition()
    assert child.decide("read", {}, ToolKind.READ_ONLY, []).stage is Stage.TRANSITION
    parent.complete_transition(Mode.PLAN)
    assert child.mode is Mode.PLAN
    assert child.decide("edit", {}, ToolKind.EDIT, ["src/a"]).decision is Decision.DENY
    refusal = child.complete_transition(Mode.BYPASS)
    assert isinstance(refusal, Refusal)


# --- properties ----------------------------------------------------------------------

_SOURCES = st.sampled_from(list(Source))
_BEHAVIORS = st.sampled_from(list(RuleBehavior))
_PATTERNS = st.sampled_from(
    [
        "Bash",
        "Bash(rm:*)",
        "Bash(git status:*)",
        "Bash(git push:*)",
        "Bash(ls)",
        "Bash(npm run *)",
        "Read",
        "Read(./.env)",
        "Read(src/**)",
        "Edit",
        "Edit(src/**)",
        "Write(docs/**)",
        "Edit(//etc/**)",
    ]
)
_COMMANDS = st.sampled_from(
    [
        "ls",
        "rm x",
        "git status",
        "git push",
        "npm run build",
        "ls && rm x",
        "cat .env",
        "echo hi > .git/config",
        "eval $X",
        "bash -c 'git status; ls'",
        "cat /etc/passwd",
    ]
)
_PATHS = st.sampled_from(
    ["src/a.py", "docs/x.md", ".env", ".git/config", "/etc/hosts", "~/.bashrc", "b.txt"]
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[Policy, Mode, str, ToolKind, list[str], str | None, bool]:
    p = Policy()
    for source, behavior, pattern in draw(
        st.lists(st.tuples(_SOURCES, _BEHAVIORS, _PATTERNS), max_size=6)
    ):
        p.add(source, behavior, pattern)
    mode = draw(st.sampled_from(list(Mode)))
    choice = draw(st.sampled_from(["bash", "read", "edit", "write", "other"]))
    transition = draw(st.integers(0, 9)) == 0  # now and then a mode change in flight
    if choice == "bash":
        kind = draw(st.sampled_from([ToolKind.EXEC, ToolKind.READ_ONLY]))
        return p, mode, "bash", kind, [], draw(_COMMANDS), transition
    kind = {
        "read": ToolKind.READ_ONLY,
        "edit": ToolKind.EDIT,
        "write": ToolKind.EDIT,
        "other": draw(st.sampled_from(list(ToolKind))),
    }[choice]
    return p, mode, choice, kind, draw(st.lists(_PATHS, max_size=3)), None, transition


def _decide(
    call: tuple[Policy, Mode, str, ToolKind, list[str], str | None, bool], ws: Path
) -> GateDecision:
    p, mode, tool, kind, paths, command, transition = call
    g = gate(p, mode, ws)
    if transition:
        g.begin_transition()
    return g.decide(tool, {"command": command} if command else {}, kind, paths, command)


@given(calls())
def test_facts_recompute_the_decision_in_the_reference_model(
    call: tuple[Policy, Mode, str, ToolKind, list[str], str | None, bool],
) -> None:
    ws = Path(os.path.realpath("/tmp"))
    d = _decide(call, ws)
    model = model_resolve(d.facts)
    assert (model.decision, model.stage, model.rule) == (d.decision, d.stage, d.rule)
    assert staged_decision(d.facts) == (d.decision, d.stage, d.rule)


@given(calls())
def test_properties(call: tuple[Policy, Mode, str, ToolKind, list[str], str | None, bool]) -> None:
    ws = Path(os.path.realpath("/tmp"))
    d = _decide(call, ws)
    facts = d.facts
    # deny dominates: a recorded deny rule always ends in deny
    if any(r.behavior is DENY for r in facts.rules):
        assert d.decision is Decision.DENY
    # dontAsk never asks
    if facts.mode is Mode.DONT_ASK:
        assert d.decision is not Decision.ASK
    # plan never allows edit or exec
    if facts.mode is Mode.PLAN and facts.kind in (ToolKind.EDIT, ToolKind.EXEC):
        assert d.decision is Decision.DENY
    # protected paths and secrets are never allowed, in any mode
    if facts.protected or facts.secret:
        assert d.decision is not Decision.ALLOW
    # a transition in flight denies everything
    if facts.transition:
        assert (d.decision, d.stage) == (Decision.DENY, Stage.TRANSITION)


@given(_COMMANDS, st.sampled_from(list(Mode)), st.lists(st.tuples(_SOURCES, _PATTERNS)))
def test_adding_a_deny_rule_never_makes_a_call_more_permissive(
    command: str, mode: Mode, rules: list[tuple[Source, str]]
) -> None:
    ws = Path(os.path.realpath("/tmp"))
    rank = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}
    p = Policy()
    for source, pattern in rules:
        p.add(source, ALLOW, pattern)
    before = sh(gate(p, mode, ws), command)
    p.add(Source.PERSISTED, DENY, "Bash(rm:*)")
    after = sh(gate(p, mode, ws), command)
    assert rank[after.decision] <= rank[before.decision]


def test_protected_never_allowed_in_any_mode(ws: Path) -> None:
    p = policy(*[(s, ALLOW, pat) for s in Source for pat in ("Edit", "Bash", "Edit(.git/**)")])
    for mode in Mode:
        g = Gate(p, mode, ws, Route.HEADLESS, additional_directories=["~"])
        for path in (".git/config", "~/.bashrc", ".metis/settings.json", "~/.ssh/config"):
            assert g.decide("edit", {}, ToolKind.EDIT, [path]).decision is not Decision.ALLOW
        assert sh(g, "echo x > .git/HEAD").decision is not Decision.ALLOW


def test_facts_type() -> None:
    # a smoke check that GateDecision carries the shared schema types
    d = staged_decision(Facts(mode=Mode.DEFAULT, kind=ToolKind.READ_ONLY))
    assert d == (Decision.ALLOW, Stage.MODE, None)


# --- the agent's settings through a directory: cd, a folder as the target -----------


@pytest.mark.parametrize(
    "command",
    [
        "cp seed/settings.json .metis/",
        "mv seed .claude",
        "cp -r seed/. .claude",
        "cd .metis && cp /tmp/x/settings.json .",
        "cd .metis; cp ../seed/settings.json settings.json",
        "cd .claude && echo '{}' > settings.local.json",
        "cd src && cd ../.metis && tee settings.json < /dev/null",
        "pushd .metis && cp /tmp/s.json settings.json",
        "cd -P .metis && cp /tmp/s.json settings.json",
        "cd $DIR && cp /tmp/s.json settings.json",
        "cd - && cp /tmp/s.json settings.json",
        "env -C .metis cp /tmp/s.json settings.json",
        "env --chdir=.claude cp /tmp/s.json settings.json",
        "env -i -C .metis cp /tmp/s.json settings.json",
        "timeout 5 env --chdir .metis tee settings.json",
        "sudo -D .claude cp /tmp/s.json settings.json",
        "env -C $D cp /tmp/s.json settings.json",
        "bash -c 'cd .metis && cp /tmp/s.json settings.json'",
        "(cd .claude; tee settings.local.json < /dev/null)",
    ],
)
@pytest.mark.parametrize("mode", [Mode.BYPASS, Mode.ACCEPT_EDITS])
def test_settings_reached_through_a_directory_are_bypass_immune(
    command: str, mode: Mode, ws: Path
) -> None:
    p = policy((Source.POLICY, ALLOW, "Bash"))
    d = sh(gate(p, mode, ws), command)
    assert (d.decision, d.stage) == (Decision.ASK, Stage.BYPASS_IMMUNE)
    assert d.facts.protected


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("cd src && cp a.txt b.txt", ToolKind.EXEC),
        ("cd src && make", ToolKind.EXEC),
        ("env -C src cp a.txt b.txt", ToolKind.EXEC),
        ("cd && ls", ToolKind.READ_ONLY),
        ("ls .metis", ToolKind.READ_ONLY),  # reading the folder changes nothing
    ],
)
def test_cd_elsewhere_is_not_protected(command: str, kind: ToolKind, ws: Path) -> None:
    d = sh(gate(policy((Source.POLICY, ALLOW, "Bash")), Mode.BYPASS, ws), command, kind)
    assert not d.facts.protected
    assert d.decision is Decision.ALLOW
