"""MCP server configuration: the Claude Code file format, expansion, sources,
approval and policy (metis_runtime/mcp/_config.py).

Entries below follow the documented examples of code.claude.com/docs/en/mcp
(stdio with env, http with headers, `${VAR}` / `${VAR:-default}` in
command, args, env, url and headers) and the settings keys of
code.claude.com/docs/en/settings-reference (/work/shared/reference section 7).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime import ConfigError
from metis_runtime.mcp import Approval
from metis_runtime.mcp import expand
from metis_runtime.mcp import normalize_name
from metis_runtime.mcp import parse_server
from metis_runtime.mcp import resolve_servers
from metis_runtime.mcp import servers_of
from metis_runtime.mcp import tool_name
from metis_runtime.mcp._config import LEVELS

# The docs' `.mcp.json` example with expansion (HTTP) and a stdio server with env.
DOCUMENTED = {
    "mcpServers": {
        "api-server": {
            "type": "http",
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
        },
        "airtable": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "airtable-mcp-server"],
            "env": {"AIRTABLE_API_KEY": "${AIRTABLE_API_KEY}"},
        },
    }
}


def test_documented_example_parses_and_expands() -> None:
    env = {"API_KEY": "k-123", "AIRTABLE_API_KEY": "at-9"}
    api, airtable = servers_of(DOCUMENTED, ".mcp.json", key_required=True, environ=env)
    assert api.transport == "http"
    assert api.url == "https://api.example.com/mcp"  # the default: API_BASE_URL is unset
    assert api.headers == {"Authorization": "Bearer k-123"}
    assert airtable.transport == "stdio"
    assert (airtable.command, airtable.args) == ("npx", ("-y", "airtable-mcp-server"))
    assert airtable.env == {"AIRTABLE_API_KEY": "at-9"}
    assert airtable.raw == DOCUMENTED["mcpServers"]["airtable"]  # unexpanded, for children
    assert "k-123" not in api.describe() and "at-9" not in airtable.describe()


def test_type_defaults_to_stdio_or_http_by_fields() -> None:
    assert parse_server("a", {"command": "x"}, "f", {}).transport == "stdio"
    assert parse_server("b", {"url": "http://127.0.0.1:1/mcp"}, "f", {}).transport == "http"


@pytest.mark.parametrize(
    ("text", "env", "want"),
    [
        ("${A}", {"A": "1"}, "1"),
        ("${A:-d}", {}, "d"),
        ("${A:-d}", {"A": ""}, "d"),  # `:-` also replaces an empty value
        ("${A}", {"A": ""}, ""),
        ("$A and ${B}", {"A": "no", "B": "yes"}, "$A and yes"),  # a bare $VAR stays
        ("x${A}y${B:-z}", {"A": "-"}, "x-yz"),
    ],
)
def test_expansion(text: str, env: dict[str, str], want: str) -> None:
    assert expand(text, "f", env) == want


def test_unset_variable_without_default_is_one_line_error() -> None:
    with pytest.raises(ConfigError, match=r"^f: mcpServers.s.env.T: \$\{TOKEN\} is not set"):
        parse_server("s", {"command": "x", "env": {"T": "${TOKEN}"}}, "f", {})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "sse", "url": "http://h/sse"}, "deprecated SSE transport"),
        ({"type": "ws", "url": "ws://h"}, "WebSocket"),
        ({"type": "grpc"}, "type must be 'stdio' or 'http'"),
        ({"command": ""}, "command: must be a non-empty string"),
        ({"command": "x", "args": "a b"}, "args: must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "env: must be an object of strings"),
        ({"command": "x", "url": "http://h"}, "unknown field"),
        ({"type": "http", "url": "ftp://h"}, "http:// or https://"),
        ({"type": "http", "url": "http://h", "oauth": {}}, "oauth: not supported"),
        ("npx server", "must be an object"),
    ],
)
def test_bad_entries_name_the_place(entry: object, message: str) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.json: mcpServers\.srv") as info:
        parse_server("srv", entry, "cfg.json", {})
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["", "a__b", "..."])
def test_unusable_server_names(name: str) -> None:
    with pytest.raises(ConfigError):
        parse_server(name, {"command": "x"}, "f", {})


def test_names_normalize_as_claude_code() -> None:
    assert normalize_name("claude.ai Drive") == "claude_ai_Drive"
    assert tool_name("my-server", "get.item") == "mcp__my-server__get_item"


@given(st.text(max_size=30))
def test_normalized_names_fit_the_provider_pattern(name: str) -> None:
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in normalize_name(name))


def test_precedence_config_over_settings_over_project() -> None:
    mk = lambda cmd: {"mcpServers": {"s": {"command": cmd}}}  # noqa: E731
    approve = ("settings.json", {"enableAllProjectMcpServers": True, **mk("from-settings")})
    setup = resolve_servers(
        configs=[("c.json", mk("from-config"))],
        settings=[approve],
        project=(".mcp.json", mk("from-project")),
        environ={},
    )
    assert [s.command for s in setup.servers] == ["from-config"]
    setup = resolve_servers(settings=[approve], project=(".mcp.json", mk("p")), environ={})
    assert [s.command for s in setup.servers] == ["from-settings"]


def test_project_servers_need_approval() -> None:
    project = (".mcp.json", {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})
    none = resolve_servers(project=project, environ={})
    assert none.servers == ()
    assert any("enabledMcpjsonServers" in n for n in none.notes)
    some = resolve_servers(
        settings=[("s.json", {"enabledMcpjsonServers": ["a"]})], project=project, environ={}
    )
    assert [s.name for s in some.servers] == ["a"]
    # a rejection wins over enableAll and over the list
    settings = {"enableAllProjectMcpServers": True, "disabledMcpjsonServers": ["a"]}
    rejected = resolve_servers(settings=[("s.json", settings)], project=project, environ={})
    assert [s.name for s in rejected.servers] == ["b"]


def test_strict_uses_only_mcp_config() -> None:
    settings = [("s.json", {"mcpServers": {"a": {"command": "x"}}})]
    setup = resolve_servers(settings=settings, strict=True, environ={})
    assert setup.servers == ()


def test_policy_deny_wins_and_allowlist_filters() -> None:
    configs = [("c.json", {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})]
    settings = [
        ("s.json", {"allowedMcpServers": [{"serverName": "a"}, {"serverName": "b"}]}),
        ("t.json", {"deniedMcpServers": [{"serverName": "b"}]}),
    ]
    setup = resolve_servers(configs=configs, settings=settings, environ={})
    assert [s.name for s in setup.servers] == ["a"]
    assert any("deniedMcpServers" in n for n in setup.notes)
    with pytest.raises(ConfigError, match="only serverName entries"):
        Approval.from_settings([("s.json", {"deniedMcpServers": [{"serverCommand": ["x"]}]})])


def test_two_servers_may_not_share_a_tool_prefix() -> None:
    configs = [("c.json", {"mcpServers": {"a.b": {"command": "x"}, "a_b": {"command": "y"}}})]
    with pytest.raises(ConfigError, match=r"named like those of 'a\.b'"):
        resolve_servers(configs=configs, environ={})


def test_config_files_need_the_mcp_servers_key() -> None:
    with pytest.raises(ConfigError, match="has no mcpServers object"):
        servers_of({"servers": {}}, "c.json", key_required=True)
    assert servers_of({"permissions": {}}, "settings.json", key_required=False) == []


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers())),
        max_size=4,
    )
)
def test_any_json_entry_parses_or_is_one_line_config_error(entry: dict[str, object]) -> None:
    try:
        parse_server("s", json.loads(json.dumps(entry)), "f.json", {})
        parse_server("s\n2", {"command": "x", **entry}, "f.json", {})
    except ConfigError as exc:
        assert str(exc).startswith("f.json: mcpServers.s") and "\n" not in str(exc)


# --- the settings hierarchy's server policy (issue 26) ------------------------------


def _levels(*files: tuple[str, str, Mapping[str, Any]]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return list(files)


def test_restrictions_apply_from_every_level() -> None:
    for level in LEVELS:
        approval = Approval.from_levels(
            _levels(
                ("/u/settings.json", "user", {"enableAllProjectMcpServers": True}),
                (f"/{level}.json", level, {"deniedMcpServers": [{"serverName": "a"}]}),
                (f"/{level}2.json", level, {"disabledMcpjsonServers": ["b"]}),
            )
        )
        assert approval.policy_refusal("a") == "denied by deniedMcpServers", level
        assert not approval.project_approved("b"), level
        assert approval.project_approved("c"), level


def test_the_projects_own_file_cannot_approve_its_servers() -> None:
    """Claude Code honours these after its trust dialog; metis does not model
    the dialog, so a committed .claude/settings.json approves nothing."""
    project = ("/p/.claude/settings.json", "project", {"enableAllProjectMcpServers": True})
    enabled = ("/p/.claude/settings.json", "project", {"enabledMcpjsonServers": ["a"]})
    for entry in (project, enabled):
        approval = Approval.from_levels(_levels(entry))
        assert not approval.project_approved("a")
        assert approval.notes and "not honoured" in approval.notes[0]
    # ... unless the user names that file with --settings
    named = Approval.from_levels(_levels(project), trusted=frozenset({project[0]}))
    assert named.project_approved("a") and named.notes == ()
    for level in ("managed", "cli", "local", "user"):
        approval = Approval.from_levels(_levels(("/f.json", level, dict(enabled[2]))))
        assert approval.project_approved("a"), level


def test_the_most_authoritative_allowlist_decides() -> None:
    user = ("/u.json", "user", {"allowedMcpServers": [{"serverName": "a"}, {"serverName": "b"}]})
    managed = ("/m.json", "managed", {"allowedMcpServers": [{"serverName": "a"}]})
    project = ("/p.json", "project", {"allowedMcpServers": [{"serverName": "c"}]})
    approval = Approval.from_levels(_levels(user, project, managed))
    assert approval.policy_refusal("a") is None
    assert approval.policy_refusal("b") == "not in allowedMcpServers"  # managed wins
    assert approval.policy_refusal("c") == "not in allowedMcpServers"  # the project's is ignored
    assert Approval.from_levels(_levels(user)).policy_refusal("b") is None


def test_resolve_servers_takes_the_hierarchy_policy() -> None:
    project = (".mcp.json", {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})
    levels = _levels(
        ("/home/u/.claude/settings.json", "user", {"enableAllProjectMcpServers": True}),
        ("/p/.claude/settings.local.json", "local", {"deniedMcpServers": [{"serverName": "b"}]}),
    )
    setup = resolve_servers(project=project, levels=levels, environ={})
    assert [s.name for s in setup.servers] == ["a"]
    assert any("'b' not started: denied by deniedMcpServers" in n for n in setup.notes)


def test_real_project_files_approving_their_servers_are_not_honoured() -> None:
    """Real committed settings that approve their own `.mcp.json` servers
    (tests/data/settings-corpus: langfuse, getsentry/skills): as the
    project's file they approve nothing; as the user's local file they do."""
    import json
    from pathlib import Path

    corpus = Path(__file__).resolve().parent.parent / "data" / "settings-corpus"
    for name in ("langfuse.json", "sentry-skills.json"):
        data = json.loads((corpus / name).read_text(encoding="utf-8"))
        assert data["enableAllProjectMcpServers"] is True
        as_project = Approval.from_levels([(name, "project", data)])
        assert not as_project.project_approved("sequential-thinking")
        assert "enableAllProjectMcpServers" in as_project.notes[0]
        assert Approval.from_levels([(name, "local", data)]).project_approved("sequential-thinking")
