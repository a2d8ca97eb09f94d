"""ToolRegistry: built-ins, entry-point plugins (a broken one is reported and
skipped), subset, specs, get."""

from __future__ import annotations

import logging
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from metis_runtime._errors import ConfigError
from metis_runtime._errors import ToolError
from metis_runtime.tools import ENTRY_POINT_GROUP
from metis_runtime.tools import PluginError
from metis_runtime.tools import ReadTool
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import UnknownToolError
from metis_runtime.tools import WriteTool

BUILTINS = ("read", "write", "edit", "ls", "glob", "grep", "bash")

PLUGIN_MODULE = """
from metis_trace import CallClass, ToolKind
from metis_runtime.tools import Classification, Tool, ToolOutput, ToolSpec


class Hello(Tool):
    spec = ToolSpec("hello", "say hello", {"type": "object", "properties": {}})

    def kind(self, input):
        return ToolKind.READ_ONLY

    def classify(self, input, ctx):
        return Classification(CallClass.SAFE, None, ToolKind.READ_ONLY)

    async def run(self, input, ctx):
        return ToolOutput("hello")


class Named(Hello):
    def __init__(self, name):
        self._spec = ToolSpec(name, "", {"type": "object", "properties": {}})

    @property
    def spec(self):
        return self._spec


def make_hello():
    return Hello()


def make_exploding():
    raise RuntimeError("factory\\n   exploded")


def make_wrong():
    return 42


def make_dupe():
    return Named("read")
"""


@pytest.fixture
def plugin_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "metis_fake_plugins.py").write_text(PLUGIN_MODULE)
    (tmp_path / "metis_fake_broken.py").write_text("import metis_no_such_module_xyz\n")
    info = tmp_path / "metis_fake_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: metis-fake-plugins\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            f"""\
            [{ENTRY_POINT_GROUP}]
            hello = metis_fake_plugins:make_hello
            exploding = metis_fake_plugins:make_exploding
            wrongtype = metis_fake_plugins:make_wrong
            dupe = metis_fake_plugins:make_dupe
            noattr = metis_fake_plugins:no_such_factory
            broken = metis_fake_broken:make
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in ("metis_fake_plugins", "metis_fake_broken"):
        sys.modules.pop(mod, None)


def test_builtin_registry() -> None:
    reg = ToolRegistry.builtin()
    assert reg.names() == BUILTINS and len(reg) == 7
    assert [s.name for s in reg.specs()] == list(BUILTINS)
    assert isinstance(reg.get("read"), ReadTool) and "read" in reg and "nope" not in reg
    assert reg.plugin_errors == ()


def test_get_unknown_is_tool_error() -> None:
    with pytest.raises(UnknownToolError, match=r"^unknown tool 'nope'$") as info:
        ToolRegistry.builtin().get("nope")
    assert isinstance(info.value, ToolError) and isinstance(info.value, LookupError)


def test_subset_keeps_registry_order_and_rejects_unknown() -> None:
    reg = ToolRegistry.builtin()
    sub = reg.subset(["bash", "read"])
    assert sub.names() == ("read", "bash")
    assert sub.get("read") is reg.get("read")
    assert reg.subset([]).names() == ()
    with pytest.raises(ConfigError, match=r"^unknown tool\(s\): 'nope', 'zzz'$"):
        reg.subset(["read", "zzz", "nope"])


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match="tool 'write' is registered twice"):
        ToolRegistry([WriteTool(), WriteTool()])


def test_plugins_load_and_broken_ones_are_reported_not_fatal(
    plugin_dist: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        reg = ToolRegistry.load()
    assert reg.names()[: len(BUILTINS)] == BUILTINS
    assert "hello" in reg.names()
    errors = {e.name: e.error for e in reg.plugin_errors}
    assert set(errors) == {"exploding", "wrongtype", "dupe", "noattr", "broken"}
    assert errors["exploding"] == "RuntimeError: factory exploded"
    assert errors["wrongtype"] == "TypeError: returned int, not a Tool"
    assert errors["dupe"] == "ConfigError: tool 'read' is registered twice"
    assert errors["broken"].startswith("ModuleNotFoundError:")
    assert errors["noattr"].startswith("AttributeError:")
    assert isinstance(reg.get("read"), ReadTool)  # the dupe did not replace the built-in
    for err in reg.plugin_errors:
        assert "\n" not in str(err) and str(err).startswith(f"tool plugin '{err.name}': ")
        assert str(err) in caplog.text


def test_load_with_explicit_entry_points(plugin_dist: Path) -> None:
    eps = [EntryPoint("hello", "metis_fake_plugins:make_hello", ENTRY_POINT_GROUP)]
    reg = ToolRegistry.load(eps)
    assert reg.names() == (*BUILTINS, "hello") and reg.plugin_errors == ()
    assert reg.subset(["hello"]).names() == ("hello",)


def test_plugin_error_str() -> None:
    assert str(PluginError("x", "boom")) == "tool plugin 'x': boom"
