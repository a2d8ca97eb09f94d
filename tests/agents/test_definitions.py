"""Agent definitions: front matter, precedence, one-line problems."""

from __future__ import annotations

from pathlib import Path

import pytest

import metis_runtime.agents as agents_pkg
from metis_runtime.agents import BUILTIN_ROLES
from metis_runtime.agents import USER_AGENTS_ENV
from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import DefinitionProblem
from metis_runtime.agents import load_agents
from metis_runtime.agents import parse_definition
from tests._exports import assert_all_lists_the_public_names


def test_public_names_equal_all() -> None:
    assert_all_lists_the_public_names(agents_pkg)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


FULL = """---
name: backend-engineer
description: Expert in the API layer
model: anthropic/claude-sonnet-4-5
thinking: high
tools: [read, write, bash, spawn_agent]
disallowedTools: read, bash
env:
  NODE_ENV: test
  DEBUG: 1
  VERBOSE: true
---
You are an expert backend engineer.

Write clean code.
"""


def test_a_full_definition_parses(tmp_path: Path) -> None:
    parsed = parse_definition(FULL, tmp_path / "x.md", "project")
    assert not isinstance(parsed, DefinitionProblem)
    got, warnings = parsed
    assert isinstance(got, AgentDefinition) and warnings == ()
    assert got.name == "backend-engineer" and got.thinking == "high"
    assert got.tools == ("read", "write", "bash", "spawn_agent")
    assert got.disallowed_tools == ("read", "bash")  # a comma string is accepted
    assert got.env == {"NODE_ENV": "test", "DEBUG": "1", "VERBOSE": "true"}
    assert got.system_prompt == "You are an expert backend engineer.\n\nWrite clean code."
    assert got.origin == "project"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("no front matter\n", "front matter", "missing"),
        ("---\nname: ok\ndescription: [a\n---\nbody\n", "front matter", "line 4"),
        ("---\nname: ok\ndescription: 2024-01-01\n---\n", "front matter", "a yaml timestamp"),
        ("---\nname: ok\ndescription: true\n---\n", "description", "valid string"),
        ("---\n- a list\n---\n", "front matter", "mapping"),
        ("---\ndescription: d\n---\n", "name", "required"),
        ("---\nname: Bad Name\ndescription: d\n---\n", "name", "lower-case"),
        ("---\nname: ok\n---\n", "description", "required"),
        ("---\nname: ok\ndescription: d\nthinking: huge\n---\n", "thinking", "off"),
        ("---\nname: ok\ndescription: d\ntools: 3\n---\n", "tools", "array"),
        ("---\nname: ok\ndescription: d\nthinking: 3\n---\n", "thinking", "line 4"),
        ("---\nname: ok\ndescription: d\npermissionMode: yolo\n---\n", "permissionMode", "unknown"),
        ("---\nname: ok\ndescription: d\nmaxTurns: 0\n---\n", "maxTurns", "greater"),
        ("---\nname: ok\ndescription: d\nworktree: branchy\n---\n", "worktree", "branch:<name>"),
        ("---\nname: ok\ndescription: d\nisolation: docker\n---\n", "isolation", "worktree"),
        ("---\nname: ok\ndescription: d\neffort: huge\n---\n", "effort", "xhigh"),
        ("---\nname: a..b\ndescription: d\n---\n", "name", "lower-case"),
        (
            "---\nname: ok\ndescription: d\nsystem_prompt: x\n---\n",
            "system_prompt",
            "not a front-matter field",
        ),
    ],
)
def test_a_bad_definition_is_one_line_naming_file_and_field(
    tmp_path: Path, text: str, field: str, words: str
) -> None:
    got = parse_definition(text, tmp_path / "bad.md", "user")
    assert isinstance(got, DefinitionProblem)
    line = str(got)
    assert "\n" not in line and line.startswith(f"{tmp_path / 'bad.md'}: ")
    assert f": {field}: " in line and "value error" not in line.lower()
    assert words.lower() in line.lower()


def test_precedence_project_then_user_then_builtin(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    user = tmp_path / "user"
    _write(
        project / ".metis" / "agents",
        "planner.md",
        "---\nname: planner\ndescription: project planner\n---\nP\n",
    )
    _write(user, "planner.md", "---\nname: planner\ndescription: user planner\n---\nU\n")
    _write(user, "reviewer.md", "---\nname: reviewer\ndescription: user reviewer\n---\nR\n")
    _write(user, "mine.md", "---\nname: mine\ndescription: only mine\n---\nM\n")
    catalog = load_agents(project, user_dir=user)
    assert catalog.agents["planner"].description == "project planner"
    assert catalog.agents["reviewer"].origin == "user"
    assert catalog.agents["implementer"].origin == "builtin"
    assert set(BUILTIN_ROLES) | {"mine"} <= set(catalog.names())
    assert {(d.name, d.origin) for d in catalog.shadowed} == {
        ("planner", "user"),
        ("planner", "builtin"),
        ("reviewer", "builtin"),
    }


def test_a_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    folder = tmp_path / "proj" / ".metis" / "agents"
    _write(folder, "a-good.md", "---\nname: good\ndescription: fine\n---\nok\n")
    bad = _write(folder, "b-bad.md", "---\nname: bad\nthinking: loud\ndescription: x\n---\n")
    (folder / "c-binary.md").write_bytes(b"\xff\xfe---")
    _write(folder, "d-twin.md", "---\nname: good\ndescription: twin\n---\n")
    catalog = load_agents(tmp_path / "proj", user_dir=tmp_path / "nobody")
    assert "good" in catalog.agents and "bad" not in catalog.agents
    problems = [str(p) for p in catalog.problems]
    assert problems[0].startswith(f"{bad}: line 3: thinking: ")
    assert problems[1].endswith("c-binary.md: line 1: file: not UTF-8 text (at byte column 1)")
    assert "name: 'good' is also defined in" in problems[2]
    assert catalog.agents["good"].description == "fine"


def test_the_user_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "u"
    _write(user, "x.md", "---\nname: from-env\ndescription: d\n---\n")
    monkeypatch.setenv(USER_AGENTS_ENV, str(user))
    assert "from-env" in load_agents(None).agents


def test_the_five_builtins_load_cleanly(tmp_path: Path) -> None:
    catalog = load_agents(None, user_dir=tmp_path / "none")
    assert catalog.problems == ()
    assert set(catalog.names()) == set(BUILTIN_ROLES)
    for name in BUILTIN_ROLES:
        d = catalog.agents[name]
        assert d.system_prompt and d.description and d.origin == "builtin"
    assert "spawn_agent" in (catalog.agents["coordinator"].tools or ())
    for read_only in ("planner", "reviewer"):
        assert not {"write", "edit", "bash"} & set(catalog.agents[read_only].tools or ())
