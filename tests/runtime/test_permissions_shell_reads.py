"""Issue 26, the gate's shell matching: every case of
`tests/data/permissions/shell_reads.yaml` decided by `metis permissions
check` and by `metis hook claude-code` over the same settings, which must
agree with each other, with the table, and with the model (PERM-1); and
Hypothesis over spellings of a denied path and over unknown runners."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._hook import claude_code
from metis_cli._permissions import infer_kind
from metis_cli._permissions import permissions
from metis_model import resolve
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import parse_mode
from metis_runtime.shell import READ_ONLY_COMMANDS
from metis_runtime.shell import interpreter_names
from metis_runtime.shell import known_programs
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

TABLE = Path(__file__).resolve().parent.parent / "data" / "permissions" / "shell_reads.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(TABLE.read_text(encoding="utf-8"))["cases"]
RANK = {"deny": 0, "ask": 1, "allow": 2}


def _world(tmp: Path, monkeypatch: pytest.MonkeyPatch, rules: dict[str, Any]) -> Path:
    """A fake home with ~/.ssh/id_rsa and a project holding .env."""
    root, home = tmp / "proj", tmp / "home"
    for d in (root / ".claude", root / "src", root / "sub", home / ".ssh"):
        d.mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("key\n")
    (home / ".ssh" / "config").write_text("Host x\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "README.md").write_text("hi\n")
    (root / "src" / "app.py").write_text("print(1)\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp / "managed"))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": rules}))
    return Path(os.path.realpath(root))


def _tool_input(case: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    tool = case.get("tool", "Bash")
    tool_input = dict(case.get("input", {}))
    if "command" in case:
        tool_input["command"] = case["command"]
    return tool, tool_input


def _check(root: Path, mode: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    args = ["check", "--workspace", str(root), "--mode", mode, "--tool", tool]
    result = CliRunner().invoke(permissions, [*args, "--input", json.dumps(tool_input), "--json"])
    assert result.exit_code == 0, result.output
    decided: dict[str, Any] = json.loads(result.stdout)
    return decided


def _hook(root: Path, mode: str, tool: str, tool_input: dict[str, Any]) -> str:
    payload = {
        "session_id": "s26",
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "permission_mode": mode,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_26",
    }
    result = CliRunner().invoke(claude_code, [], input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    if not result.stdout.strip():
        return "allow"  # the hook prints nothing for an allow
    return str(json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"])


@pytest.mark.parametrize(
    "case", CASES, ids=[str(c.get("command", c.get("tool")))[:60] for c in CASES]
)
def test_check_and_hook_agree_with_the_table(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _world(tmp_path, monkeypatch, case["rules"])
    mode = case.get("mode", "default")
    tool, tool_input = _tool_input(case)
    checked = _check(root, mode, tool, tool_input)
    assert checked["decision"] == case["expect"], (checked["stage"], checked["detail"])
    assert _hook(root, mode, tool, tool_input) == case["expect"]
    if "claude_code" in case:  # deliberately stricter, said why, and said by check
        assert case["why"]
        assert RANK[case["expect"]] < RANK[case["claude_code"]]
        assert checked["stricter_than_claude_code"], checked


def test_table_covers_every_item_of_the_issue() -> None:
    commands = " ".join(str(c.get("command", "")) for c in CASES)
    for needle in ("$HOME", "${HOME}", "{config,id_rsa}", "f=~/", "cp -r", "tar czf", "zip -r",
                   "rsync -a", "awk", "python3 -c", "-exec", "-ok", "-delete", "npm --version",
                   "git -C", "caffeinate", "unbuffer", "systemd-inhibit"):  # fmt: skip
        assert needle in commands, needle
    assert any(c.get("tool") == "Agent" for c in CASES)
    assert any("dangerouslyDisableSandbox" in c.get("input", {}) for c in CASES)


# --- Hypothesis ---------------------------------------------------------------

_SPELLINGS = st.sampled_from(
    ["~/.ssh/id_rsa", "$HOME/.ssh/id_rsa", "${HOME}/.ssh/id_rsa", '"$HOME"/.ssh/id_rsa',
     "~/.ssh/{id_rsa,none}", "~/.s{s,x}h/id_rsa", "~/.ssh/id_{rsa,dsa}", "~/.ssh/id_rs?",
     '"${HOME}/.ssh/id_rsa"', "~/'.ssh'/id_rsa"]
)  # fmt: skip
_READERS = st.sampled_from(
    ["cat {p}", "head -n 3 {p}", "tail {p}", "less {p}", "sed -n p {p}", "awk '{{print}}' {p}",
     "grep -h . {p}", "base64 {p}", "cp {p} /tmp/k", "tar czf /tmp/k.tgz {p}", "wc -c < {p}",
     "python3 -c 'import sys' {p}", "xxd {p}", "sort {p}"]
)  # fmt: skip
_FORMS = st.sampled_from(["{c}", "timeout 5 {c}", "nice {c}", "ls && {c}", "echo x | {c}",
                          "f={p}; {cv}", "(cd /tmp && {c})", "env {c}"])  # fmt: skip
_MODES = st.sampled_from(list(Mode))


def _gate(ws: Path, mode: Mode, rules: dict[str, list[str]]) -> Gate:
    policy = Policy()
    for behavior, patterns in rules.items():
        for pattern in patterns:
            policy.add(Source.PROJECT, RuleBehavior(behavior), pattern, base=ws)
    return Gate(policy, mode, ws, Route.HEADLESS)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=_SPELLINGS, reader=_READERS, form=_FORMS, mode=_MODES)
def test_no_spelling_of_a_denied_path_is_allowed(
    spelling: str,
    reader: str,
    form: str,
    mode: Mode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the spelling, reader, wrapper or mode: never allowed, and the
    facts recompute the decision (PERM-1)."""
    root = _world(tmp_path, monkeypatch, {})
    command = form.format(c=reader.format(p=spelling), cv=reader.format(p="$f"), p=spelling)
    gate = _gate(root, mode, {"deny": ["Read(~/.ssh/**)"], "allow": ["Bash"]})
    tool_input = {"command": command}
    d = gate.decide("Bash", tool_input, infer_kind("Bash", tool_input))
    assert d.decision is not Decision.ALLOW, (command, d.stage, d.detail)
    if mode is Mode.DONT_ASK:
        assert d.decision is Decision.DENY
    assert resolve(d.facts).decision is d.decision


_AWK, _INTERPRETERS = interpreter_names()
_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=3, max_size=12).filter(
    lambda n: n[0] != "-" and n not in known_programs() | READ_ONLY_COMMANDS | _AWK | _INTERPRETERS
)  # programs metis does not know


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=_NAMES, mode=_MODES, flags=st.sampled_from(["", "-q ", "--wait "]))
def test_an_unknown_runner_never_carries_a_denied_command(
    name: str, mode: Mode, flags: str, tmp_path: Path
) -> None:
    ws = Path(os.path.realpath(tmp_path))
    gate = _gate(ws, mode, {"deny": ["Bash(rm *)"], "allow": ["Bash"]})
    command = f"{name} {flags}rm -rf build"
    d = gate.decide("Bash", {"command": command}, infer_kind("Bash", {"command": command}))
    assert d.decision is not Decision.ALLOW, (command, d.stage, d.detail)
    if mode is Mode.DONT_ASK:
        assert d.decision is Decision.DENY
    assert resolve(d.facts).decision is d.decision


def test_modes_parse() -> None:
    assert all(parse_mode(c.get("mode", "default"), "mode") for c in CASES)


def test_a_folder_too_large_to_walk_asks_under_read_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metis_runtime.permissions import _shelltrees

    root = _world(tmp_path, monkeypatch, {})
    big = root / "big"
    big.mkdir()
    for i in range(10):
        (big / f"f{i}").write_text("x")
    monkeypatch.setattr(_shelltrees, "TREE_LIMIT", 3)
    command = {"command": "tar czf out.tgz big"}
    guarded = _gate(root, Mode.BYPASS, {"deny": ["Read(.env)"]}).decide(
        "Bash", command, infer_kind("Bash", command)
    )
    assert guarded.decision is Decision.ASK and "too large" in guarded.detail
    plain = _gate(root, Mode.BYPASS, {}).decide("Bash", command, infer_kind("Bash", command))
    assert plain.decision is Decision.ALLOW


def test_a_denied_file_deep_in_a_copied_folder_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _world(tmp_path, monkeypatch, {})
    deep = root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "id_ed25519").write_text("k")
    gate = _gate(root, Mode.BYPASS, {"deny": ["Read(**/id_ed25519)"]})
    for command in ("cp -r a /tmp/x", "tar cf x.tar a", "zip -qr x.zip a", "rsync -a a/ b/"):
        d = gate.decide("Bash", {"command": command}, infer_kind("Bash", {"command": command}))
        assert d.decision is Decision.DENY, (command, d.stage, d.detail)
    clean = gate.decide(
        "Bash", {"command": "tar cf x.tar src"}, infer_kind("Bash", {"command": "ls"})
    )
    assert clean.decision is Decision.ALLOW


@pytest.mark.parametrize(
    ("command", "bulk", "writes"),
    [
        ("tar czf x.tgz d1 d2", ("d1", "d2"), ("x.tgz",)),
        ("tar -czf x.tgz d", ("d",), ("x.tgz",)),
        ("tar --create --file=x.tar d", ("d",), ("x.tar",)),
        ("tar -c -f x.tar d", ("d",), ("x.tar",)),
        ("tar xzf x.tgz", ("x.tgz",), ()),  # extracting reads the archive
        ("tar cf - .", (".",), ()),  # `-` is standard output
        ("zip -r out.zip src docs", ("src", "docs"), ("out.zip",)),
        ("cp -a src dst", ("src",), ("dst",)),
        ("cp src dst", (), ("dst",)),  # not recursive: a plain read
        ("rsync -avz src/ host:/x", ("src/",), ()),  # another machine
        ("scp -r d user@h:", ("d",), ()),
        ("cp -r a b:c", ("a",), ("b:c",)),  # cp has no remote form
        ("7z a x.7z d", ("d",), ("x.7z",)),
    ],
)
def test_copies_and_archives(command: str, bulk: tuple[str, ...], writes: tuple[str, ...]) -> None:
    from metis_runtime.permissions._shellfiles import file_effects
    from metis_runtime.shell import analyze_command

    (cmd,) = analyze_command(command).commands
    effects = file_effects(cmd)
    assert (effects.bulk_reads, effects.writes) == (bulk, writes)


def test_a_link_to_a_denied_folder_inside_a_copied_one_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _world(tmp_path, monkeypatch, {})
    (root / "bundle").mkdir()
    (root / "bundle" / "keys").symlink_to(Path(os.environ["HOME"]) / ".ssh")
    gate = _gate(root, Mode.BYPASS, {"deny": ["Read(~/.ssh/**)"]})
    d = gate.decide(
        "Bash", {"command": "zip -r b.zip bundle"}, infer_kind("Bash", {"command": "x"})
    )
    assert d.decision is Decision.DENY, (d.stage, d.detail)
