"""Rule syntax, settings files and the policy: parsing, matching, errors."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime._errors import ConfigError
from metis_runtime.permissions import Policy
from metis_runtime.permissions import load_settings
from metis_runtime.permissions import parse_rule
from metis_runtime.permissions import settings_root
from metis_runtime.permissions._rules import RuleSyntaxError
from metis_runtime.permissions._rules import SpecKind
from metis_runtime.permissions._rules import bash_matches
from metis_runtime.permissions._rules import domain_matches
from metis_runtime.permissions._rules import mcp_matches
from metis_runtime.permissions._rules import path_matches
from metis_runtime.shell import SimpleCommand
from metis_runtime.shell import analyze_command
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import Source


def cmd(text: str) -> SimpleCommand:
    (only,) = [c for c in analyze_command(text).commands if not c.container][-1:]
    return only


def bash(pattern: str, command: str, definite: bool = True) -> bool:
    spec = parse_rule(f"Bash({pattern})")
    assert spec.bash is not None
    return bash_matches(spec.bash, cmd(command), definite=definite)


# --- parsing ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Bash", SpecKind.ANY),
        ("Bash(*)", SpecKind.ANY),
        ("Bash(git status:*)", SpecKind.BASH),
        ("Bash(npm run test)", SpecKind.BASH),
        ("Bash(npm run *)", SpecKind.BASH),
        ("Read(./.env)", SpecKind.PATH),
        ("Read(~/secrets/**)", SpecKind.PATH),
        ("Edit(src/**)", SpecKind.PATH),
        ("Edit(//etc/hosts)", SpecKind.PATH),
        ("Write(docs/*.md)", SpecKind.PATH),
        ("WebFetch(domain:example.com)", SpecKind.DOMAIN),
        ("WebFetch", SpecKind.ANY),
        ("mcp__github", SpecKind.ANY),
        ("mcp__github__create_issue", SpecKind.ANY),
        ("  Read  ", SpecKind.ANY),
    ],
)
def test_valid_rules(text: str, kind: SpecKind) -> None:
    assert parse_rule(text).kind is kind


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Bash(",
        "Bash()",
        "Read()",
        "WebFetch(example.com)",
        "WebFetch(domain:)",
        "WebFetch(domain:exa mple.com)",
        "mcp__github(x)",
        "9tool",
        "Bash(ls) trailing",
    ],
)
def test_malformed_rules(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        parse_rule(text)


def test_policy_add_reports_place() -> None:
    with pytest.raises(ConfigError, match=r"session deny rule: malformed rule 'Bash\('"):
        Policy().add(Source.SESSION, RuleBehavior.DENY, "Bash(")


# --- bash matching --------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("git status:*", "git status", True),
        ("git status:*", "git status --short", True),
        ("git status:*", "git  status", True),
        ("git status:*", "git statusx", False),
        ("git status:*", "git log", False),
        ("git:*", "gitk", False),
        ("npm run test", "npm run test", True),
        ("npm run test", "npm run test --watch", False),
        ("npm run test", "npm run", False),
        ("npm run *", "npm run build", True),
        ("npm run *", "npm run", True),
        ("npm run *", "npm install", False),
        ("* --version", "node --version", True),
        ("rm:*", "/bin/rm x", True),
        ("rm:*", "./rm x", False),
        ('git commit -m "a b":*', "git commit -m 'a b' -q", True),
        ("rm:*", "timeout 5 rm x", True),
        ("timeout:*", "timeout 5 rm x", False),  # timeout is stripped before matching
        ("rm:*", "sudo rm x", False),
        ("sudo rm:*", "sudo rm x", True),
        ("sudo:*", "sudo -u root rm x", True),
        ("rm x", "rm $y", False),
        ("rm:*", "rm $y", True),
        ("npm test", "xargs npm test", False),
        ("npm test:*", "xargs npm test", True),
    ],
)
def test_bash_allow_matching(pattern: str, command: str, expected: bool) -> None:
    assert bash(pattern, command, definite=True) is expected


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("rm -rf:*", "rm $x", True),
        ("rm -rf:*", "rm $x /", True),
        ("rm -rf:*", "rm *", True),
        ("rm -rf:*", "rm -f x", False),
        ("rm -rf:*", "xargs rm", True),
        ("git push:*", "git $sub", True),
        ("git push:*", "git status $x", False),
        ("git push", "git push $x", True),
        ("sudo:*", "sudo rm x", True),
        ("rm:*", "sudo rm x", True),
        ("rm:*", "/usr/local/bin/rm x", True),
        ("rm:*", "./tools/rm x", True),
        ("curl * | sh", "curl $u", True),
        ("bash:*", "bash -c 'ls'", True),
    ],
)
def test_bash_deny_matching_is_conservative(pattern: str, command: str, expected: bool) -> None:
    spec = parse_rule(f"Bash({pattern})")
    assert spec.bash is not None
    commands = analyze_command(command).commands
    assert any(bash_matches(spec.bash, c, definite=False) for c in commands) is expected


_TOKEN = st.text(alphabet="abcdefgxyz-.", min_size=1, max_size=4)


@given(st.lists(_TOKEN, min_size=1, max_size=4), st.lists(_TOKEN, max_size=6))
def test_prefix_rule_is_word_prefix(prefix: list[str], argv: list[str]) -> None:
    """`Bash(p:*)` surely matches exactly the commands whose words start with p."""
    command = " ".join(shlex.quote(w) for w in ["cmd", *argv])
    spec = parse_rule("Bash(" + " ".join(shlex.quote(w) for w in ["cmd", *prefix]) + ":*)")
    assert spec.bash is not None
    (c,) = analyze_command(command).commands
    expected = argv[: len(prefix)] == prefix
    assert bash_matches(spec.bash, c, definite=True) is expected
    # whatever surely matches also may match
    if expected:
        assert bash_matches(spec.bash, c, definite=False)


@given(st.lists(_TOKEN, min_size=1, max_size=4), st.lists(_TOKEN, max_size=4))
def test_dynamic_word_may_match_any_deny(prefix: list[str], argv: list[str]) -> None:
    """A run-time word where the rule's words would be: the deny rule may match."""
    spec = parse_rule("Bash(" + " ".join(shlex.quote(w) for w in ["cmd", *prefix]) + ":*)")
    assert spec.bash is not None
    (c,) = analyze_command(" ".join(["cmd", "$X", *(shlex.quote(w) for w in argv)])).commands
    assert bash_matches(spec.bash, c, definite=False)
    assert not bash_matches(spec.bash, c, definite=True)


# --- path matching ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("./.env", "/ws/.env", True),
        ("./.env", "/ws/sub/.env", False),
        (".env", "/ws/sub/.env", True),
        ("*.pem", "/ws/a/b/key.pem", True),
        ("*.pem", "/elsewhere/key.pem", False),
        ("src/**", "/ws/src/a/b.py", True),
        ("src/**", "/ws/lib/src/a.py", False),
        ("src/**/*.ts", "/ws/src/x.ts", True),
        ("src/**/*.ts", "/ws/src/a/b/x.ts", True),
        ("src/**/*.ts", "/ws/src/a/b/x.js", False),
        ("src/*.py", "/ws/src/a/b.py", False),
        ("src", "/ws/src/deep/file", True),
        ("src/", "/ws/src/deep/file", True),
        ("/docs/*.md", "/ws/docs/a.md", True),
        ("//etc/hosts", "/etc/hosts", True),
        ("//etc/**", "/etc/ssl/x", True),
        ("../shared/**", "/shared/x", True),
        ("data/[ab].csv", "/ws/data/a.csv", True),
        ("data/[!ab].csv", "/ws/data/a.csv", False),
        ("data/?.csv", "/ws/data/c.csv", True),
    ],
)
def test_path_rules(pattern: str, path: str, expected: bool, tmp_path: Path) -> None:
    # Use a base without symlinks so /ws stands for itself.
    assert path_matches(pattern, Path(path), Path("/ws")) is expected


def test_home_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = Path(os.path.realpath(tmp_path))
    assert path_matches("~/secrets/**", home / "secrets" / "a", Path("/ws"))
    assert not path_matches("~/secrets/**", home / "public" / "a", Path("/ws"))


def test_rule_base_resolves_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    # Candidates are realpath'd by the gate; the base must be too.
    assert path_matches("src/**", Path(os.path.realpath(real)) / "src" / "a", link)


# --- domains and mcp ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "url", "expected"),
    [
        ("example.com", "https://example.com/x", True),
        ("example.com", "https://EXAMPLE.com./x", True),
        ("example.com", "https://api.example.com/x", False),
        ("example.com", "https://example.com.evil.io/", False),
        ("example.com", "https://evil.io/?u=example.com", False),
        ("*.example.com", "https://api.example.com/", True),
        ("*.example.com", "https://example.com/", False),
        ("example.com:8080", "http://example.com:8080/", True),
        ("example.com:8080", "http://example.com/", False),
        ("example.com", None, None),
        ("example.com", "not a url at all", None),
    ],
)
def test_domains(domain: str, url: object, expected: bool | None) -> None:
    assert domain_matches(domain, url) is expected


def test_mcp() -> None:
    assert mcp_matches("mcp__github", "mcp__github__create_issue")
    assert mcp_matches("mcp__github__*", "mcp__github__create_issue")
    assert mcp_matches("mcp__github__create_issue", "mcp__github__create_issue")
    assert not mcp_matches("mcp__github__create_issue", "mcp__github__delete_repo")
    assert not mcp_matches("mcp__github", "mcp__githubx__t")


# --- settings files ------------------------------------------------------------------


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_settings_file(tmp_path: Path) -> None:
    f = write(
        tmp_path / ".metis" / "settings.json",
        {
            "model": "ignored: other features' keys",
            "permissions": {
                "allow": ["Bash(git status:*)"],
                "ask": ["Bash(git push:*)"],
                "deny": ["Read(./.env)"],
                "defaultMode": "acceptEdits",
                "additionalDirectories": ["../shared"],
            },
        },
    )
    s = load_settings(f)
    assert s.root == tmp_path
    assert settings_root(tmp_path / ".claude" / "settings.local.json") == tmp_path
    assert settings_root(tmp_path / "conf" / "perm.json") == tmp_path / "conf"
    assert s.default_mode is Mode.ACCEPT_EDITS
    assert s.additional_directories == (Path(os.path.realpath(tmp_path.parent / "shared")),)
    policy = Policy()
    policy.add_settings(s, Source.PROJECT)
    assert [(r.pattern, r.behavior, r.recency) for r in policy.rules] == [
        ("Bash(git status:*)", RuleBehavior.ALLOW, 1),
        ("Bash(git push:*)", RuleBehavior.ASK, 2),
        ("Read(./.env)", RuleBehavior.DENY, 3),
    ]
    assert policy.rules[2].origin == f"{f}: permissions.deny[0]"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", r"invalid JSON at line 1 column 2"),
        (
            '{"permissions": {"allow": [], "allow": []}}',
            r"line 1: permissions.allow: duplicate key",
        ),
        ('{"permissions": {"x": NaN}}', r"line 1: permissions.x: NaN is not a JSON number"),
        ("[]", r"settings must be a JSON object"),
        (
            {"permissions": {"allowManagedPermissionRulesOnly": "yes"}},
            r"allowManagedPermissionRulesOnly: must be a boolean",
        ),
    ],
)
def test_bad_settings_name_file_and_field(tmp_path: Path, content: object, message: str) -> None:
    """What still refuses the whole file: it is not JSON, not an object, or a
    managed policy key no reading can honour without opening something."""
    f = write(tmp_path / "settings.json", content)
    with pytest.raises(ConfigError, match=message) as info:
        load_settings(f)
    assert str(info.value).startswith(str(f))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "warning", "fallback"),
    [
        ({"permissions": []}, r"permissions: must be an object, ignored", None),
        ({"permissions": ["Bash(rm *)"]}, r"permissions\[0\]: rule .* not read", "*"),
        ({"permissions": {"alow": []}}, r"permissions\.alow: unknown key, ignored", None),
        ({"permissions": {"dney": ["Bash(rm *)"]}}, r"permissions\.dney\[0\]: rule", "Bash"),
        ({"permissions": {"allow": "Bash"}}, r"permissions\.allow: rule 'Bash' not read", None),
        (
            {"permissions": {"deny": "Bash(rm *)"}},
            r"permissions\.deny: rule .*\(not a list\)",
            "Bash",
        ),
        ({"permissions": {"deny": ["Bash", 3]}}, r"deny\[1\]: rule '3' not read .*not int", "*"),
        (
            {"permissions": {"deny": ["Bash", "Bash("]}},
            r"deny\[1\]: rule 'Bash\(' not read",
            "Bash",
        ),
        (
            {"permissions": {"ask": ["WebSearch(x)"]}},
            r"ask\[0\]: .*takes no specifier",
            "WebSearch",
        ),
        ({"permissions": {"deny": ["// dangerous"]}}, r"deny\[0\]: .*dropped", None),
        ({"permissions": {"defaultMode": "yolo"}}, r"defaultMode: unknown mode .*ignored", None),
        (
            {"permissions": {"disableBypassPermissionsMode": True}},
            r"disableBypassPermissionsMode: True is not 'disable'; bypassPermissions is disabled",
            None,
        ),
        ({"permissions": {"additionalDirectories": [3]}}, r"additionalDirectories\[0\]", None),
    ],
)
def test_what_metis_cannot_read_is_a_warning_and_fails_closed(
    tmp_path: Path, content: object, warning: str, fallback: str | None
) -> None:
    """Claude Code skips a malformed rule with a warning (managed-settings
    docs); metis warns naming file, list, index and text, drops a lost allow
    and stands an ask on the whole tool in for a lost deny or ask."""
    f = write(tmp_path / "settings.json", content)
    s = load_settings(f)
    assert len(s.warnings) == 1, s.warnings
    assert s.warnings[0].startswith(f"{f}: ")
    assert re.search(warning, s.warnings[0]), s.warnings[0]
    assert "\n" not in s.warnings[0]
    assert [lost.fallback for lost in s.lost if lost.fallback] == ([fallback] if fallback else [])
    policy = Policy()
    policy.add_settings(s, Source.PROJECT)
    asks = [r.pattern for r in policy.rules if r.behavior is RuleBehavior.ASK]
    assert asks == ([fallback] if fallback else [])


def test_a_lost_rule_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    f = write(
        tmp_path / "s.json", {"permissions": {"allow": ["Read", "*"], "deny": ["Bash(rm *)"]}}
    )
    s = load_settings(f)
    assert (s.allow, s.deny) == (("Read",), ("Bash(rm *)",))
    assert s.disable_bypass is False


def test_unreadable_settings(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read settings"):
        load_settings(tmp_path / "missing.json")


def test_default_mode_by_authority_then_recency(tmp_path: Path) -> None:
    policy = Policy()
    for name, mode, source in [
        ("a", "plan", Source.PROJECT),
        ("b", "acceptEdits", Source.CLI),
        ("c", "dontAsk", Source.PROJECT),
    ]:
        policy.load(
            write(tmp_path / f"{name}.json", {"permissions": {"defaultMode": mode}}), source
        )
    assert policy.default_mode is Mode.ACCEPT_EDITS
    policy.load(write(tmp_path / "d.json", {"permissions": {"defaultMode": "plan"}}), Source.CLI)
    assert policy.default_mode is Mode.PLAN


def test_derived_policy_sees_parent_rules_live() -> None:
    parent = Policy()
    child = parent.derive()
    child.add(Source.SESSION, RuleBehavior.DENY, "Bash(rm:*)")
    parent.add(Source.PROJECT, RuleBehavior.DENY, "Edit")
    assert [r.pattern for r in child.rules] == ["Edit", "Bash(rm:*)"]
    assert [r.pattern for r in parent.rules] == ["Edit"]
    recencies = [r.recency for r in child.rules]
    assert len(set(recencies)) == 2  # one shared counter


# --- rule texts Claude Code accepts (issue 26) ----------------------------------


@pytest.mark.parametrize(
    "text",
    ["Read(*)", "Edit(*)", "Task(*)", "Agent(*)", "Skill(*)", "TodoWrite(*)", "mcp__s__t(*)"],
)
def test_tool_star_is_the_bare_tool(text: str) -> None:
    """`Tool(*)` is `Tool` (permissions docs: `Bash(*)` is equivalent to `Bash`)."""
    assert parse_rule(text).kind is SpecKind.ANY
    assert parse_rule(text, RuleBehavior.ALLOW).tool == text[: text.index("(")]


@pytest.mark.parametrize(
    ("rule", "url", "expected"),
    [
        ("WebFetch(domain:[::1])", "http://[::1]/x", True),
        ("WebFetch(domain:[::1])", "http://[0:0:0:0:0:0:0:1]:8080/", True),
        ("WebFetch(domain:[::1])", "http://localhost/", False),
        ("WebFetch(domain:[::1])", "http://127.0.0.1/", False),
        ("WebFetch(domain:[fd00:ec2::254])", "http://[fd00:ec2::254]/latest", True),
        ("WebFetch(domain:[::1]:8080)", "http://[::1]:8080/", True),
        ("WebFetch(domain:[::1]:8080)", "http://[::1]:9090/", False),
        ("WebFetch(domain:localhost)", "http://[::1]/", False),
    ],
)
def test_ipv6_literal_hosts(rule: str, url: str, expected: bool) -> None:
    spec = parse_rule(rule)
    assert spec.domain is not None
    assert domain_matches(spec.domain, url) is expected


def test_a_bad_ipv6_literal_is_malformed() -> None:
    with pytest.raises(RuleSyntaxError, match="IPv6"):
        parse_rule("WebFetch(domain:[1::2::3])")


def test_older_tool_names_name_todays_tools(tmp_path: Path) -> None:
    """`Task` names the Agent tool, `KillShell` TaskStop (module comment)."""
    policy = Policy()
    policy.add(Source.PROJECT, RuleBehavior.DENY, "KillShell")
    policy.add(Source.PROJECT, RuleBehavior.ASK, "Task(Explore)")
    assert [r.pattern for r in policy.rules_for("TaskStop")] == ["KillShell"]
    assert [r.pattern for r in policy.rules_for("Agent")] == ["Task(Explore)"]


_ENTRY = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["Bash(", "Bash(rm -rf", "WebSearch(x)", "9tool", "mcp__*", "Read()", "*"]),
    st.builds(lambda t, s: f"{t}({s}", st.sampled_from(["Bash", "Edit", "WebFetch"]), st.text()),
    st.integers(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@given(
    lists=st.dictionaries(
        st.sampled_from(["allow", "ask", "deny", "dney"]),
        st.one_of(st.lists(_ENTRY, max_size=5), _ENTRY),
        max_size=4,
    )
)
def test_no_rule_list_refuses_the_file_and_no_lost_deny_opens_anything(
    lists: dict[str, object],
) -> None:
    """Whatever the lists hold, the file is read (a warning per lost entry),
    and every lost deny or ask leaves an ask on its tool (or on every tool)."""
    from metis_runtime.permissions._policy import settings_from_mapping

    s = settings_from_mapping({"permissions": lists}, Path("/p/.claude/settings.json"))
    policy = Policy()
    policy.add_settings(s, Source.PROJECT)
    asks = {r.pattern for r in policy.rules if r.behavior is RuleBehavior.ASK}
    for lost in s.lost:
        assert lost.warning().startswith("/p/.claude/settings.json: permissions.")
        if lost.where.startswith(("permissions.deny", "permissions.ask", "permissions.dney")):
            text = lost.text.strip("'\"").strip()
            if lost.fallback is None:
                assert not text or text.startswith(("//", "#")), lost
            else:
                assert lost.fallback in asks
        if lost.where.startswith("permissions.allow"):
            assert lost.fallback is None
