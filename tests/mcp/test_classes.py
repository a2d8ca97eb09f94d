"""How MCP calls are classified (metis_runtime/mcp/_classes.py): the class
from untrusted annotations (MCP spec, "Tool annotations"; issue 16), the
kind that never loosens the gate, and the paths arguments name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime import ConfigError
from metis_runtime.mcp import Annotations
from metis_runtime.mcp import argument_paths
from metis_runtime.mcp import parse_declarations
from metis_runtime.mcp import tool_class
from metis_runtime.mcp._classes import stricter
from metis_trace import CallClass

flags = st.one_of(st.none(), st.booleans())
annotations = st.builds(Annotations, flags, flags, flags, flags)


@pytest.mark.parametrize(
    ("hints", "want"),
    [
        (Annotations(read_only=True), CallClass.SAFE),
        (Annotations(read_only=True, idempotent=True, open_world=True), CallClass.SAFE),
        (Annotations(read_only=True, destructive=True), CallClass.EXCLUSIVE),
        (Annotations(read_only=False), CallClass.EXCLUSIVE),
        (Annotations(destructive=False, idempotent=True), CallClass.EXCLUSIVE),
        (Annotations(), CallClass.EXCLUSIVE),  # unannotated
    ],
)
def test_class_from_annotations(hints: Annotations, want: CallClass) -> None:
    assert tool_class("mcp__s__t", hints) == (want, None)


@given(annotations)
def test_destructive_is_never_safe(hints: Annotations) -> None:
    cls, _ = tool_class("mcp__s__t", hints)
    assert cls is CallClass.SAFE or hints.read_only is not True or hints.destructive is True
    if hints.destructive is True or hints.read_only is not True:
        assert cls is CallClass.EXCLUSIVE


def test_settings_declare_queue_and_background() -> None:
    declared = parse_declarations(
        [
            ("a.json", {"mcpToolClasses": {"mcp__db": "queue", "mcp__ci__build": "background"}}),
            ("b.json", {"mcpToolClasses": {"mcp__db__report": "queue:reports"}}),
        ]
    )
    assert tool_class("mcp__db__query", Annotations(), declared) == (CallClass.QUEUE, "mcp:db")
    # the later file first: its entry decides
    assert tool_class("mcp__db__report", Annotations(), declared) == (
        CallClass.QUEUE,
        "mcp:reports",
    )
    assert tool_class("mcp__ci__build", Annotations(destructive=True), declared) == (
        CallClass.BACKGROUND,
        None,
    )
    assert tool_class("mcp__ci__lint", Annotations(), declared) == (CallClass.EXCLUSIVE, None)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"mcp__db": "safe"}, "must be queue, queue:<key>, background or exclusive"),
        ({"Bash": "queue"}, "must name MCP tools"),
        ({"mcp__db": 3}, "must be a string"),
        ([], "must be an object"),
    ],
)
def test_bad_declarations(table: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_declarations([("s.json", {"mcpToolClasses": table})])


def test_a_class_only_gets_stricter() -> None:
    safe, excl = (CallClass.SAFE, None), (CallClass.EXCLUSIVE, None)
    assert stricter(excl, safe) == excl
    assert stricter(safe, excl) == excl


def test_argument_paths(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    args = {
        "path": "notes.txt",  # a path field: relative to the workspace
        "filePath": "src/a.py",  # camelCase field
        "query": "/etc/passwd",  # an absolute value in any field
        "items": [{"target_dir": "out"}],  # nested
        "uri": "file:///tmp/x",
        "name": "plain text",
        "remote": "file://host/share",  # another host: not a local path
        "home": "~/.ssh/id_rsa",
    }
    paths = argument_paths(args, ws)
    assert ws / "notes.txt" in paths and ws / "src/a.py" in paths and ws / "out" in paths
    assert Path("/etc/passwd") in paths and Path(os.path.realpath("/tmp/x")) in paths
    assert Path(os.path.realpath(os.path.expanduser("~/.ssh/id_rsa"))) in paths
    assert all("plain" not in str(p) and "share" not in str(p) for p in paths)


def test_symlinks_are_resolved(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    (ws / "link").symlink_to("/etc")
    assert argument_paths({"path": "link/hosts"}, ws) == (Path(os.path.realpath("/etc/hosts")),)
