"""Executor manifests: signed, verified, one-line errors; the tool runs for real."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from metis_runtime import ConfigError
from metis_runtime.plan import ManifestTool
from metis_runtime.plan import StepError
from metis_runtime.plan import load_manifest
from metis_runtime.plan import load_manifests
from metis_runtime.plan import sign_manifest
from metis_runtime.tools import FileTransaction
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_trace import CallClass
from metis_trace import ToolKind

from ._runtime import SCENARIO
from ._runtime import seed


def _write(
    folder: Path, data: dict[str, Any], program: str = "print('[]')\n", sign: bool = True
) -> Path:
    (folder / "prog.py").write_text(program)
    path = folder / "m.yaml"
    path.write_text(yaml.safe_dump(data))
    if sign:
        _, signed = sign_manifest(path)
        path.write_text(yaml.safe_dump(signed))
    return path


BASE: dict[str, Any] = {
    "name": "lister",
    "effect": "read_only",
    "family": "test.list",
    "produces": "collection",
    "program": "prog.py",
    "args": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def test_the_shipped_manifests_verify(tmp_path: Path) -> None:
    seed(tmp_path)
    found, problems = load_manifests(tmp_path / ".metis" / "executors")
    assert problems == [] and sorted(m.info.name for m in found) == [
        "create_summary",
        "find_notes",
        "read_notes",
    ]
    assert SCENARIO.is_file()


def test_a_changed_program_breaks_the_digest(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE)
    load_manifest(path)
    (tmp_path / "prog.py").write_text("print('[1]')\n")
    with pytest.raises(ConfigError, match=r"m\.yaml: digest: does not match .*refused"):
        load_manifest(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"effect": "delete"}, "effect: must be one of read_only, edit, exec"),
        ({"produces": "stream"}, "produces: must be one of"),
        ({"program": "../prog.py"}, "program: must be beside the manifest"),
        ({"consumes": "nope"}, "consumes: must name an argument"),
        ({"paths": ["nope"]}, "paths: 'nope' is not an argument"),
        ({"timeout": 0}, "timeout: must be a number of seconds"),
        ({"mystery": 1}, "mystery: unknown field"),
        ({"args": {"type": "array"}}, "args: must be a JSON schema of type object"),
        ({"name": "bad name"}, "name: letters, digits"),
    ],
)
def test_malformed_manifests_are_one_line_errors_naming_the_field(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path, {**BASE, **change, "digest": "sha256:x"}, sign=False)
    with pytest.raises(ConfigError) as info:
        load_manifest(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_unsigned_and_unreadable_manifests(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE, sign=False)
    with pytest.raises(ConfigError, match="digest: missing"):
        load_manifest(path)
    path.write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_manifest(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": NaN}')
    with pytest.raises(ConfigError, match=r"bad\.json"):
        load_manifest(bad)


def _ctx(tmp_path: Path, tx: FileTransaction | None = None) -> ToolContext:
    return ToolContext(tmp_path, {"PATH": "/usr/bin:/bin"}, JobManager(), tx)


def test_the_tool_runs_the_program_with_the_arguments_on_stdin(tmp_path: Path) -> None:
    program = (
        "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps([args['path'], 'x']))\n"
    )
    tool = ManifestTool(load_manifest(_write(tmp_path, BASE, program)))
    assert tool.classify({"path": "a"}, _ctx(tmp_path)).cls is CallClass.SAFE
    out = asyncio.run(tool.run({"path": "a"}, _ctx(tmp_path)))
    assert json.loads(out.content) == ["a", "x"]


@pytest.mark.parametrize(
    ("program", "cls", "text"),
    [
        ("import sys; sys.exit(3)\n", "operational", "exit 3"),
        ("print('not json')\n", "operational", "not JSON"),
        (
            'import json; print(json.dumps({"error": {"class": "missing_input", "message": "no such album"}}))\n',
            "missing_input",
            "no such album",
        ),
    ],
)
def test_failures_name_their_class(tmp_path: Path, program: str, cls: str, text: str) -> None:
    tool = ManifestTool(load_manifest(_write(tmp_path, BASE, program)))
    with pytest.raises(StepError) as info:
        asyncio.run(tool.run({}, _ctx(tmp_path)))
    assert info.value.cls == cls and text in str(info.value)


def test_a_timeout_is_operational_and_kills_the_program(tmp_path: Path) -> None:
    tool = ManifestTool(
        load_manifest(_write(tmp_path, {**BASE, "timeout": 0.5}, "import time; time.sleep(30)\n"))
    )
    with pytest.raises(StepError) as info:
        asyncio.run(tool.run({}, _ctx(tmp_path)))
    assert (info.value.cls, info.value.reason) == ("operational", "timeout")


def test_an_edit_executor_is_exclusive_and_rolled_back_on_failure(tmp_path: Path) -> None:
    data = {
        **BASE,
        "effect": "edit",
        "paths": ["path"],
        "destination": "path",
        "produces": "object",
    }
    program = (
        "import json, sys\nopen(json.load(sys.stdin)['path'], 'w').write('changed')\nsys.exit(1)\n"
    )
    tool = ManifestTool(load_manifest(_write(tmp_path, data, program)))
    target = tmp_path / "doc.txt"
    target.write_text("before")
    assert tool.classify({"path": "doc.txt"}, _ctx(tmp_path)).cls is CallClass.EXCLUSIVE
    assert tool.kind({}) is ToolKind.EDIT
    tx = FileTransaction()
    with pytest.raises(StepError):
        asyncio.run(tool.run({"path": "doc.txt"}, _ctx(tmp_path, tx)))
    tx.rollback()
    assert target.read_text() == "before"
