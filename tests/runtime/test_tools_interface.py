"""The tool interface: specs, input validation, exports."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import metis_runtime.tools as tools_pkg
from metis_runtime._errors import ToolError
from metis_runtime._errors import ToolInputError
from metis_runtime.tools import Classification
from metis_runtime.tools import JobManager
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolSpec
from metis_runtime.tools import builtin_tools
from metis_trace import CallClass
from metis_trace import ToolKind


def test_all_matches_public_names() -> None:
    public = {n for n in vars(tools_pkg) if not n.startswith("_")} - {"annotations"}
    assert set(tools_pkg.__all__) == public
    assert len(tools_pkg.__all__) == len(set(tools_pkg.__all__))


def _fields(spec: ToolSpec) -> dict[str, tuple[str, bool]]:
    schema = spec.input_schema
    req = set(schema["required"])
    return {k: (v["type"], k in req) for k, v in schema["properties"].items()}


def test_builtin_schemas_exactly() -> None:
    specs = {t.name: t.spec for t in builtin_tools()}
    assert {n: _fields(s) for n, s in specs.items()} == {
        "read": {
            "path": ("string", True),
            "offset": ("integer", False),
            "limit": ("integer", False),
        },
        "write": {"path": ("string", True), "content": ("string", True)},
        "edit": {
            "path": ("string", True),
            "old": ("string", True),
            "new": ("string", True),
            "replace_all": ("boolean", False),
        },
        "ls": {"path": ("string", False)},
        "glob": {"pattern": ("string", True), "path": ("string", False)},
        "grep": {
            "pattern": ("string", True),
            "path": ("string", False),
            "glob": ("string", False),
            "no_ignore": ("boolean", False),
        },
        "bash": {
            "command": ("string", True),
            "timeout": ("number", False),
            "background": ("boolean", False),
        },
    }
    for spec in specs.values():
        assert spec.input_schema["type"] == "object"
        assert spec.input_schema["additionalProperties"] is False
        assert spec.description


def test_builtin_kinds() -> None:
    kinds = {t.name: t.kind({"path": "x"}) for t in builtin_tools() if t.name != "bash"}
    assert kinds == {
        "read": ToolKind.READ_ONLY,
        "write": ToolKind.EDIT,
        "edit": ToolKind.EDIT,
        "ls": ToolKind.READ_ONLY,
        "glob": ToolKind.READ_ONLY,
        "grep": ToolKind.READ_ONLY,
    }


SPEC = ToolSpec(
    "demo",
    "demo",
    {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 1},
            "i": {"type": "integer", "minimum": 0},
            "n": {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
            "b": {"type": "boolean"},
            "e": {"enum": ["x", "y"]},
        },
        "required": ["s"],
        "additionalProperties": False,
    },
)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "demo: input must be an object, got array"),
        ({}, "demo: missing required field 's'"),
        ({"s": 3}, "demo: field 's' must be a string, got integer"),
        ({"s": ""}, "demo: field 's' must not be empty"),
        ({"s": "a", "i": True}, "demo: field 'i' must be an integer, got boolean"),
        ({"s": "a", "i": 1.0}, "demo: field 'i' must be an integer, got number"),
        ({"s": "a", "i": -1}, "demo: field 'i' must be >= 0"),
        ({"s": "a", "n": 0}, "demo: field 'n' must be > 0"),
        ({"s": "a", "n": 10.5}, "demo: field 'n' must be <= 10"),
        ({"s": "a", "n": math.nan}, "demo: field 'n' must be a number, got non-finite number"),
        ({"s": "a", "b": "true"}, "demo: field 'b' must be a boolean, got string"),
        ({"s": "a", "e": "z"}, "demo: field 'e' must be one of ['x', 'y']"),
        ({"s": "a", "file_path": "b"}, "demo: unknown field 'file_path'"),
    ],
)
def test_validate_rejects_with_one_line_naming_the_field(value: Any, message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        SPEC.validate(value)
    assert str(info.value) == message
    assert isinstance(info.value, ToolError) and isinstance(info.value, ValueError)


def test_validate_accepts_good_input() -> None:
    SPEC.validate({"s": "a", "i": 0, "n": 10, "b": False, "e": "y"})
    SPEC.validate({"s": "a", "n": 0.5})


def test_open_schema_ignores_unknown_fields() -> None:
    spec = ToolSpec("open", "", {"type": "object", "properties": {}})
    spec.validate({"anything": 1})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.sampled_from(["s", "i", "n", "b", "e", "zz"]), json_values) | json_values)
def test_validate_fails_only_with_one_line_tool_input_error(value: Any) -> None:
    try:
        SPEC.validate(value)
    except ToolInputError as exc:
        text = str(exc)
        assert text.startswith("demo: ") and "\n" not in text
    else:
        assert isinstance(value, dict) and isinstance(value["s"], str) and value["s"]
        assert set(value) <= {"s", "i", "n", "b", "e"}


class _Minimal(Tool):
    spec = ToolSpec("minimal", "", {"type": "object", "properties": {}})

    def kind(self, input: Any) -> ToolKind:
        return ToolKind.PLAN_CONTROL

    def classify(self, input: Any, ctx: ToolContext) -> Classification:
        return Classification(CallClass.SAFE, None, ToolKind.PLAN_CONTROL)

    async def run(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("ok")


def test_tool_abc_name_comes_from_spec_and_abstracts_are_enforced() -> None:
    assert _Minimal().name == "minimal"

    class Incomplete(Tool):
        spec = ToolSpec("x", "", {})

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]


def test_context_resolves_workspace(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    ctx = ToolContext(workspace=tmp_path / "link" / ".", env={}, jobs=JobManager())
    assert ctx.workspace == real
