"""`metis permissions check`: decision, stage and rule; one-line errors, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from metis_cli._permissions import infer_kind
from metis_cli._permissions import input_paths
from metis_cli._permissions import permissions
from metis_trace import ToolKind
from tests.runtime._hierarchy import fake_hierarchy
from tests.runtime._hierarchy import write_permissions as _write


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    f = tmp_path / ".metis" / "settings.json"
    f.parent.mkdir()
    f.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash", "Edit(src/**)"],
                    "deny": ["Bash(rm:*)", "Read(./.env)"],
                    "defaultMode": "acceptEdits",
                }
            }
        )
    )
    return f


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(permissions, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_is_a_click_group() -> None:
    assert isinstance(permissions, click.Group)
    assert "check" in permissions.commands


def test_deny_by_rule(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--tool", "bash", "--input", '{"command": "ls && rm -rf x"}'
    )
    assert code == 0
    assert "decision: deny" in out
    assert "stage:    deny_rule" in out
    assert "rule:     Bash(rm:*) (deny, project;" in out
    assert f"{settings}: permissions.deny[0]" in out
    assert "mode=acceptEdits" in out


def test_json_output(settings: Path, tmp_path: Path) -> None:
    code, out, _ = run(
        "--settings",
        str(settings),
        "--tool",
        "edit",
        "--input",
        json.dumps({"file_path": "src/a.py"}),
        "--mode",
        "default",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["decision"] == "allow"
    assert payload["stage"] == "allow_rule"
    assert payload["rule"]["pattern"] == "Edit(src/**)"
    assert payload["rule"]["source"] == "project"
    assert payload["facts"]["kind"] == "edit"


def test_bypass_immune_and_opaque(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--mode", "bypassPermissions", "--tool", "bash",
        "--input", '{"command": "eval $X"}',
    )  # fmt: skip
    assert code == 0
    assert "decision: ask" in out
    assert "stage:    bypass_immune" in out
    assert "rule:     none" in out
    assert "detail:   not fully analysable" in out


def test_secret_read_denied_by_rule(settings: Path) -> None:
    code, out, _ = run(
        "--settings", str(settings), "--tool", "Read", "--input", '{"file_path": ".env"}'
    )
    assert code == 0
    assert "decision: deny" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tool", "bash", "--input", "{x"], "--input: not valid JSON"),
        (["--tool", "bash", "--input", '{"a": NaN}'], "--input: a: NaN is not a JSON number"),
        (["--tool", "bash", "--input", "[1]"], "--input: must be a JSON object"),
        (["--tool", "bash", "--mode", "yolo"], "--mode: unknown value 'yolo'"),
        (["--tool", "bash", "--source", "me"], "--source: unknown value 'me'"),
        (["--tool", "bash", "--kind", "risky"], "--kind: unknown value 'risky'"),
        (
            ["--tool", "bash", "--workspace", "/no/such/dir"],
            "--workspace: /no/such/dir: not a directory",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(settings: Path, args: list[str], message: str) -> None:
    code, out, err = run("--settings", str(settings), *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_bad_settings_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = run("--settings", str(missing), "--tool", "bash")
    assert (code, err.count("\n")) == (2, 1)
    assert f"{missing}: cannot read settings" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"permissions": {"deny": ["Bash("]}}')
    code, out, err = run("--settings", str(bad), "--tool", "bash")
    assert (code, err) == (0, "")  # a rule it cannot read is a note, not a refusal
    assert f"note:     {bad}: permissions.deny[0]: rule 'Bash(' not read" in out


def test_kind_and_path_inference() -> None:
    assert infer_kind("bash", {"command": "ls"}) is ToolKind.READ_ONLY
    assert infer_kind("bash", {"command": "rm x"}) is ToolKind.EXEC
    assert infer_kind("Write", {}) is ToolKind.EDIT
    assert infer_kind("mcp__x__y", {}) is ToolKind.EXEC
    assert input_paths({"file_path": "a", "paths": ["b", 3], "path": "c"}) == ["a", "c", "b"]


def test_settings_from_standard_input() -> None:
    settings = json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}})
    result = CliRunner().invoke(
        permissions,
        ["check", "--settings", "-", "--tool", "Bash", "--input", '{"command": "rm -rf x"}'],
        input=settings,
    )
    assert result.exit_code == 0, result.output
    assert "decision: deny" in result.output and "Bash(rm:*)" in result.output


# --- the settings hierarchy (issue 12) ---------------------------------------------------


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A project, a home and a managed-settings directory, none of them real."""
    return fake_hierarchy(tmp_path, monkeypatch, "proj")


def test_real_hierarchy_reports_the_deciding_file(world: tuple[Path, Path, Path]) -> None:
    project, home, managed = world
    user = _write(home / ".claude" / "settings.json", {"allow": ["Bash(npm test)"]})
    shared = _write(project / ".claude" / "settings.json", {"deny": ["Bash(curl:*)"]})
    local = _write(project / ".claude" / "settings.local.json", {"ask": ["Bash(git push:*)"]})
    fragment = _write(managed / "managed-settings.d" / "10-org.json", {"deny": ["Bash(sudo:*)"]})
    base = ["--workspace", str(project), "--tool", "Bash", "--json"]
    cases = {
        "npm test": ("allow", user, "persisted"),
        "curl x": ("deny", shared, "project"),
        "git push": ("ask", local, "project"),
        "sudo ls": ("deny", fragment, "policy"),
    }
    for command, (decision, origin, source) in cases.items():
        code, out, _ = run(*base, "--input", json.dumps({"command": command}))
        payload = json.loads(out)
        assert code == 0
        assert payload["decision"] == decision, command
        assert payload["rule"]["origin"].startswith(f"{origin}: permissions.")
        assert payload["rule"]["source"] == source
    levels = {Path(f["path"]): f["level"] for f in payload["settings"]}
    assert levels == {user: "user", shared: "project", local: "local", fragment: "managed"}


def test_several_settings_files_and_levels_by_location(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    shared = _write(project / ".claude" / "settings.json", {"defaultMode": "plan"})
    local = _write(project / ".claude" / "settings.local.json", {"defaultMode": "acceptEdits"})
    other = _write(project / "ci-settings.json", {"deny": ["Edit(/src/**)"]})
    code, out, _ = run(
        "--settings", str(shared), "--settings", str(local), "--settings", str(other),
        "--tool", "Edit", "--input", json.dumps({"file_path": str(project / "src" / "a.py")}),
    )  # fmt: skip
    assert code == 0
    assert "mode=acceptEdits" in out  # local outranks shared
    assert f"rule:     Edit(/src/**) (deny, cli; {other}: permissions.deny[0])" in out
    assert f"settings: {other} (cli, cli)" in out
    assert f"settings: {local} (local, project)" in out


def test_project_defaultmode_auto_and_bypass_are_ignored(world: tuple[Path, Path, Path]) -> None:
    project, home, _ = world
    _write(home / ".claude" / "settings.json", {"defaultMode": "acceptEdits"})
    _write(project / ".claude" / "settings.json", {"defaultMode": "bypassPermissions"})
    _write(project / ".claude" / "settings.local.json", {"defaultMode": "auto"})
    code, out, _ = run("--workspace", str(project), "--tool", "Read", "--input", "{}")
    assert code == 0
    assert "mode=acceptEdits" in out  # the user's, as the project's are ignored
    assert out.count("ignored in project settings") == 2


def test_managed_only_rules(world: tuple[Path, Path, Path]) -> None:
    project, _, managed = world
    _write(managed / "managed-settings.json", {"allowManagedPermissionRulesOnly": True})
    _write(project / ".claude" / "settings.json", {"allow": ["Bash(npm test)"]})
    code, out, _ = run(
        "--workspace", str(project), "--tool", "Bash", "--input", '{"command": "npm test"}'
    )
    assert code == 0
    assert "decision: ask" in out
    assert "rules ignored (allowManagedPermissionRulesOnly)" in out


def test_every_documented_mode(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    edit = json.dumps({"file_path": str(project / "a.py")})
    want = {
        "default": "ask",
        "manual": "ask",
        "acceptEdits": "allow",
        "auto": "allow",
        "plan": "deny",
        "dontAsk": "deny",
        "bypassPermissions": "allow",
    }
    for mode, decision in want.items():
        code, out, _ = run("--workspace", str(project), "--mode", mode, "--tool", "Write",
                           "--input", edit)  # fmt: skip
        assert (code, f"decision: {decision}" in out) == (0, True), (mode, out)
    code, out, _ = run("--workspace", str(project), "--mode", "auto", "--tool", "Bash",
                       "--input", '{"command": "npm test"}')  # fmt: skip
    assert "decision: ask" in out
    assert "stricter than Claude Code: auto mode runs as acceptEdits" in out


def test_auto_suspends_broad_allows_and_can_be_disabled(world: tuple[Path, Path, Path]) -> None:
    project, home, _ = world
    _write(home / ".claude" / "settings.json", {"allow": ["Bash", "Bash(npm test)"]})
    bash = ["--workspace", str(project), "--tool", "Bash"]
    code, out, _ = run(*bash, "--mode", "auto", "--input", '{"command": "make"}')
    assert "decision: ask" in out  # `Bash` is suspended under auto
    code, out, _ = run(*bash, "--mode", "auto", "--input", '{"command": "npm test"}')
    assert "decision: allow" in out
    _write(project / ".claude" / "settings.json", {"disableAutoMode": "disable"})
    code, _, err = run(*bash, "--mode", "auto", "--input", '{"command": "npm test"}')
    assert code == 2 and "auto is disabled by disableAutoMode" in err


def test_stricter_line_for_protected_paths_in_bypass(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    code, out, _ = run(
        "--workspace", str(project), "--mode", "bypassPermissions", "--tool", "Bash",
        "--input", json.dumps({"command": "echo x > .husky/pre-commit"}),
    )  # fmt: skip
    assert code == 0 and "decision: ask" in out
    assert "stricter than Claude Code: bypassPermissions allows protected paths" in out
    _, out, _ = run("--workspace", str(project), "--tool", "Read", "--input", "{}")
    assert "stricter than Claude Code" not in out


@pytest.mark.parametrize(
    ("rule", "where", "then"),
    [
        ("*", "allow", "dropped"),
        ("mcp__*", "allow", "dropped"),
        ("B*", "allow", "dropped"),
        ("Bash(", "deny", "every Bash call asks instead"),
        ("WebSearch(x)", "ask", "every WebSearch call asks instead"),
        ("9tool", "deny", "every call of every tool asks instead"),
    ],
)
def test_a_rule_metis_cannot_read_is_a_note_naming_file_list_index_and_text(
    world: tuple[Path, Path, Path], rule: str, where: str, then: str
) -> None:
    """Claude Code skips a malformed rule with a warning; metis does too, and
    the rest of the file still applies (issue 26)."""
    project, _, _ = world
    bad = _write(project / ".claude" / "settings.json", {where: ["Read", rule]})
    code, out, err = run("--workspace", str(project), "--tool", "Read", "--input", "{}")
    assert code == 0 and err == ""
    note = next(line for line in out.splitlines() if line.startswith("note:"))
    assert f"{bad}: permissions.{where}[1]: rule {rule!r} not read" in note
    assert then in note


def test_a_lost_deny_asks_on_its_whole_tool_and_the_rest_applies(
    world: tuple[Path, Path, Path],
) -> None:
    project, _, _ = world
    _write(
        project / ".claude" / "settings.json",
        {"allow": ["Bash(ls *)", "Read"], "deny": ["Bash(rm -rf", "Read(./.env)"]},
    )
    base = ("--workspace", str(project), "--mode", "dontAsk")
    code, out, _ = run(*base, "--tool", "Bash", "--input", json.dumps({"command": "ls -la"}))
    assert code == 0 and "decision: deny" in out  # dontAsk: the stand-in ask denies
    assert "(not read: 'Bash(rm -rf'; asks instead)" in out
    assert "stricter than Claude Code: Claude Code skips a rule it cannot read" in out
    code, out, _ = run(*base, "--tool", "Read", "--input", json.dumps({"file_path": "a.txt"}))
    assert "decision: allow" in out  # the rest of the file applies
    code, out, _ = run(*base, "--tool", "Read", "--input", json.dumps({"file_path": ".env"}))
    assert "decision: deny" in out and "Read(./.env)" in out


def test_invalid_json_still_stops_with_one_line(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    bad = project / ".claude" / "settings.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"permissions": {"deny": ["Bash(rm *)"]')
    code, out, err = run("--workspace", str(project), "--tool", "Read", "--input", "{}")
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert f"{bad}: invalid JSON" in err


def test_lost_rules_in_the_json_output(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    bad = _write(project / ".claude" / "settings.json", {"deny": [3]})
    code, out, _ = run("--workspace", str(project), "--tool", "Read", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["decision"] == "ask"
    assert payload["notes"] == [
        f"{bad}: permissions.deny[0]: rule '3' not read (a rule must be a string, not int); "
        "every call of every tool asks instead (its tool cannot be read)"
    ]


def test_rules_claude_code_accepts_are_accepted(world: tuple[Path, Path, Path]) -> None:
    project, _, _ = world
    rules = ["Bash(git:* push)", "Bash(:*)", "Bash(echo 'x:*)", "Glob(src/**)", "Write(*.md)",
             "mcp__github", "mcp__github__*", "mcp__github__get_*", "Agent(Explore)",
             "Task(reviewer)", "Agent(model:opus)", "Bash(dangerouslyDisableSandbox:true)",
             "WebFetch(domain:*.example.com)", "WebFetch(domain:docs.*)", "Skill(deploy *)",
             "Read(//etc/hosts)", "Edit(~/notes/**)"]  # fmt: skip
    _write(project / ".claude" / "settings.json", {"ask": rules, "allow": rules[5:8]})
    code, _, err = run("--workspace", str(project), "--tool", "Read", "--input", "{}")
    assert code == 0, err
