"""Claude Code subagent files: real ones from public repositories, the
documented fields, the folders and their precedence, warnings with lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from metis_cli._agents import agents
from metis_runtime.agents import CLAUDE_CONFIG_ENV
from metis_runtime.agents import CLAUDE_FIELDS
from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import DefinitionProblem
from metis_runtime.agents import agent_folders
from metis_runtime.agents import load_agents
from metis_runtime.agents import parse_definition

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude-agents" / "project"
FIXTURE_NAMES = {
    "weather-agent",
    "development-workflows-research-agent",
    "workflow-claude-subagents-agent",
    "growth-loops",
    "dotnet-framework-4.8-expert",
    "visual-asset-generator",
    "api-designer",
    "team-lead",
    "team-reviewer",
    "agent-orchestration-context-manager",
    "c4-code",
}


def _catalog(tmp_path: Path, project: Path = FIXTURES):  # type: ignore[no-untyped-def]
    return load_agents(project, user_dir=tmp_path / "u", claude_user_dir=tmp_path / "cu")


def test_every_real_file_loads_with_its_warnings(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    assert catalog.problems == ()
    claude = {n for n, d in catalog.agents.items() if d.dialect == "claude-code"}
    assert claude == FIXTURE_NAMES
    warned = sorted((Path(w.path).name, w.field, w.line) for w in catalog.warnings)
    assert warned == [
        ("development-workflows-research-agent.md", "allowedTools", 6),
        ("growth-loops.md", "description", 3),
        ("weather-agent.md", "allowedTools", 4),
        ("workflow-claude-subagents-agent.md", "allowedTools", 6),
    ]
    for w in catalog.warnings:
        assert str(w).startswith(f"{w.path}: line {w.line}: {w.field}: ") and "\n" not in str(w)


def test_the_fields_of_real_files(tmp_path: Path) -> None:
    a = _catalog(tmp_path).agents
    weather = a["weather-agent"]
    assert weather.origin == "project" and weather.path.endswith("shanraisshan/weather-agent.md")
    assert (weather.permission_mode, weather.max_turns, weather.model) == (
        "acceptEdits",
        5,
        "sonnet",
    )
    kept = weather.kept()
    assert kept["skills"] == ["weather-fetcher"] and kept["memory"] == "project"
    assert kept["color"] == "green" and set(kept["hooks"]) == {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
    }
    assert kept["allowedTools"] == ["Read", "Skill"]  # undocumented: kept as written
    assert weather.tools is None  # allowedTools is not `tools`: Claude Code ignores it too
    assert a["development-workflows-research-agent"].permission_mode == "bypassPermissions"
    assert a["team-lead"].tools == (
        "Read",
        "Glob",
        "Grep",
        "Bash",
        "Agent",
        "TeamCreate",
        "TeamDelete",
        "TaskCreate",
        "TaskList",
        "TaskGet",
        "TaskUpdate",
        "SendMessage",
    )
    assert a["team-lead"].model == "fable"
    assert a["agent-orchestration-context-manager"].model == "inherit"
    assert a["visual-asset-generator"].tools == ("Read", "Write", "Bash", "mcp__prompt-to-asset")
    growth = a["growth-loops"].description
    assert growth.startswith("Use when the user wants") and "Triggers on: 'growth loop'" in growth


def test_the_unquoted_colon_reading_gives_the_text_as_written(tmp_path: Path) -> None:
    text = (FIXTURES / ".claude" / "agents" / "voltagent" / "growth-loops.md").read_text()
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text.split("---")[1])  # invalid YAML indeed
    line = next(x for x in text.splitlines() if x.startswith("description: "))
    got = parse_definition(text, tmp_path / "g.md", "project", "claude-code")
    assert not isinstance(got, DefinitionProblem)
    assert got[0].description == line[len("description: ") :].strip()


def test_list_json_shows_source_and_resolved_fields(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(FIXTURES, project)
    result = CliRunner().invoke(
        agents,
        [
            "list",
            "--project",
            str(project),
            "--user-dir",
            str(tmp_path / "u"),
            "--claude-user-dir",
            str(tmp_path / "cu"),
            "--provider",
            "anthropic",
            "--mode",
            "acceptEdits",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [f["format"] for f in data["folders"]] == [
        "metis",
        "claude-code",
        "metis",
        "claude-code",
        "metis",
    ]
    rows = {r["name"]: r for r in data["agents"]}
    weather = rows["weather-agent"]
    assert weather["path"] == str(project / ".claude/agents/shanraisshan/weather-agent.md")
    assert weather["mode"] == "acceptEdits" and weather["model"] == "claude-sonnet-4-5"
    assert weather["sources"]["model"] == "frontmatter" and weather["max_turns"] == 5
    assert set(weather["kept"]) == {"skills", "hooks", "memory", "color", "allowedTools"}
    research = rows["development-workflows-research-agent"]
    assert research["mode"] == "acceptEdits" and "more permissive" in research["mode_note"]
    lead = rows["team-lead"]
    assert lead["tools"] == [
        "bash",
        "glob",
        "grep",
        "list_agents",
        "message_agent",
        "read",
        "spawn_agent",
        "wait_agent",
    ]
    assert "TeamCreate" in lead["tools_not_available"] and lead["model"] == "fable"
    assert rows["agent-orchestration-context-manager"]["sources"]["model"] == "parent"
    assert rows["c4-code"]["model"] == "claude-haiku-4-5"
    assert rows["growth-loops"]["tools_not_available"] == ["WebFetch", "WebSearch"]
    assert {r["workspace"] for r in rows.values()} == {"inherit"}
    assert len(data["warnings"]) == 4 and data["problems"] == []


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _agent(name: str, description: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\nbody of {description}\n"


def test_precedence_over_the_five_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, user, claude_home = tmp_path / "p", tmp_path / "u", tmp_path / "claude-home"
    monkeypatch.setenv(CLAUDE_CONFIG_ENV, str(claude_home))
    for name in ("a", "b", "c", "d"):
        _write(claude_home / "agents" / "deep", f"{name}.md", _agent(name, "claude user"))
    for name in ("a", "b", "c"):
        _write(user, f"{name}.md", _agent(name, "metis user"))
    for name in ("a", "b"):
        _write(project / ".claude" / "agents" / "sub", f"{name}.md", _agent(name, "claude project"))
    _write(project / ".metis" / "agents", "a.md", _agent("a", "metis project"))
    _write(project / ".metis" / "agents", "planner.md", _agent("planner", "mine"))
    catalog = load_agents(project, user_dir=user)
    got = {n: catalog.agents[n].description for n in ("a", "b", "c", "d", "planner")}
    assert got == {
        "a": "metis project",
        "b": "claude project",
        "c": "metis user",
        "d": "claude user",
        "planner": "mine",
    }
    assert [f.path for f in agent_folders(project, user_dir=user)][:4] == [
        project / ".metis" / "agents",
        project / ".claude" / "agents",
        user,
        claude_home / "agents",
    ]
    assert len([d for d in catalog.shadowed if d.name == "a"]) == 3
    assert catalog.agents["d"].dialect == "claude-code" and catalog.agents["d"].origin == "user"


def test_every_documented_field_is_accepted_and_none_is_an_error(tmp_path: Path) -> None:
    values = {
        "name": "all-fields",
        "description": "d",
        "tools": "Read, Agent(worker, researcher), Bash(git diff:*)",
        "disallowedTools": ["Write"],
        "model": "haiku",
        "permissionMode": "dontAsk",
        "maxTurns": 7,
        "skills": ["a", "b"],
        "mcpServers": ["github", {"local": {"command": "x"}}],
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]
        },
        "memory": "user",
        "background": True,
        "effort": "max",
        "isolation": "worktree",
        "initialPrompt": "start",
        "color": "magenta",
    }
    assert set(values) == set(CLAUDE_FIELDS)
    text = "---\n" + yaml.safe_dump(values, sort_keys=False) + "---\nbody\n"
    got = parse_definition(text, tmp_path / "all.md", "project", "claude-code")
    assert not isinstance(got, DefinitionProblem), got
    d, warnings = got
    assert warnings == ()
    assert d.tools == ("Read", "Agent(worker, researcher)", "Bash(git diff:*)")
    assert (d.max_turns, d.background, d.thinking_level, d.workspace) == (
        7,
        True,
        "xhigh",
        "branch",
    )
    assert d.mode is not None and d.mode.value == "dontAsk"
    assert set(d.kept()) == {"skills", "mcpServers", "hooks", "memory", "initialPrompt", "color"}


def test_an_unknown_field_is_a_warning_with_its_line(tmp_path: Path) -> None:
    text = "---\nname: x\ndescription: d\n\ncolour: red\nnested:\n  a: 1\n---\nbody\n"
    got = parse_definition(text, tmp_path / "x.md", "project", "claude-code")
    assert not isinstance(got, DefinitionProblem)
    d, warnings = got
    assert [(w.field, w.line) for w in warnings] == [("colour", 5), ("nested", 6)]
    assert d.kept() == {"colour": "red", "nested": {"a": 1}}


def test_crlf_files_and_the_colon_reading(tmp_path: Path) -> None:
    # Claude Code skips this file (anthropics/claude-code#80890); metis reads it.
    text = "---\r\nname: crlf\r\ndescription: My agent [ref: ABC-123]\r\n---\r\nbody\r\n"
    got = parse_definition(text, tmp_path / "c.md", "project", "claude-code")
    assert not isinstance(got, DefinitionProblem), got
    assert got[0].description == "My agent [ref: ABC-123]"
    assert [w.line for w in got[1]] == [3]


def test_an_indented_continuation_is_not_guessed_at(tmp_path: Path) -> None:
    # The continuation lines are not indented: the value cannot be recovered (#91871).
    text = "---\nname: x\ndescription: Examples:\n<example>\nuser: hi\n---\nbody\n"
    got = parse_definition(text, tmp_path / "x.md", "project", "claude-code")
    assert isinstance(got, DefinitionProblem) and got.field == "front matter"


_KEY = st.sampled_from([*CLAUDE_FIELDS, "thinking", "env", "worktree", "colour", "x-y"])
_SCALAR = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.lists(st.text(max_size=8), max_size=3),
)


@given(st.dictionaries(_KEY, _SCALAR, max_size=8), st.text(max_size=60))
def test_any_front_matter_loads_or_is_one_line(data: dict[str, object], body: str) -> None:
    text = "---\n" + yaml.safe_dump(data, allow_unicode=True) + "---\n" + body
    got = parse_definition(text, Path("/x/a.md"), "project", "claude-code")
    if isinstance(got, DefinitionProblem):
        assert "\n" not in str(got) and str(got).startswith("/x/a.md: ")
    else:
        definition, warnings = got
        assert isinstance(definition, AgentDefinition)
        assert {w.field for w in warnings} <= {"colour", "x-y"}


@given(
    st.text(
        st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\ufeff"),
        min_size=1,
        max_size=60,
    ).filter(lambda t: t.strip() == t and t[0] not in "'\"|>[{&*!%@`#-?:,]}")
)
def test_a_plain_description_reads_as_written(description: str) -> None:
    """Whatever a single-line plain value holds, it is read as written (strict
    YAML when it is valid, Claude Code's reading when it is not), or refused
    in one line."""
    text = f"---\nname: x\ndescription: {description}\n---\nbody\n"
    got = parse_definition(text, Path("/x/a.md"), "project", "claude-code")
    if isinstance(got, DefinitionProblem):
        assert "\n" not in str(got)
        return
    definition = got[0]
    try:
        strict = yaml.safe_load(f"d: {description}")["d"]
    except yaml.YAMLError:
        assert definition.description == description
    else:
        if isinstance(strict, str):
            assert definition.description == strict
