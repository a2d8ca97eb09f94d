"""The tool registry: built-ins plus plugins loaded by entry point."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from importlib.metadata import entry_points

from attrs import frozen

from .._errors import ConfigError
from .._errors import ToolError
from ._base import Tool
from ._base import ToolSpec

ENTRY_POINT_GROUP = "metis.tools"

_log = logging.getLogger(__name__)


class UnknownToolError(ToolError, LookupError):
    """A call names a tool the registry does not have."""


@frozen
class PluginError:
    """A plugin that could not be loaded: its entry point name and why."""

    name: str
    error: str

    def __str__(self) -> str:
        return f"tool plugin '{self.name}': {self.error}"


def builtin_tools() -> tuple[Tool, ...]:
    """Fresh instances of the built-in tools."""
    from ._bash import BashTool
    from ._fs import EditTool
    from ._fs import GlobTool
    from ._fs import GrepTool
    from ._fs import LsTool
    from ._fs import ReadTool
    from ._fs import WriteTool

    return (ReadTool(), WriteTool(), EditTool(), LsTool(), GlobTool(), GrepTool(), BashTool())


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ToolRegistry:
    """Tools by name, in registration order. Names are unique."""

    __slots__ = ("_tools", "plugin_errors")

    def __init__(
        self, tools: Iterable[Tool] = (), plugin_errors: Iterable[PluginError] = ()
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._add(tool)
        self.plugin_errors: tuple[PluginError, ...] = tuple(plugin_errors)
        """Plugins that failed to load (empty unless built by `load`)."""

    def _add(self, tool: Tool) -> None:
        name = tool.name
        if name in self._tools:
            raise ConfigError(f"tool '{name}' is registered twice")
        self._tools[name] = tool

    @classmethod
    def builtin(cls) -> ToolRegistry:
        """Only the built-in tools."""
        return cls(builtin_tools())

    @classmethod
    def load(cls, eps: Iterable[EntryPoint] | None = None) -> ToolRegistry:
        """The built-ins plus every plugin of the `metis.tools` entry-point group
        (or of `eps`). Each entry point is a zero-argument callable returning a
        Tool. A plugin that fails (import, call, wrong type, taken name) is
        skipped and recorded in `plugin_errors`; the others still load."""
        registry = cls.builtin()
        errors: list[PluginError] = []
        for ep in entry_points(group=ENTRY_POINT_GROUP) if eps is None else eps:
            try:
                factory = ep.load()
                tool = factory()
                if not isinstance(tool, Tool):
                    raise TypeError(f"returned {type(tool).__name__}, not a Tool")
                registry._add(tool)
            except Exception as exc:  # any plugin failure is that plugin's, not ours
                err = PluginError(ep.name, _one_line(exc))
                _log.warning("%s", err)
                errors.append(err)
        registry.plugin_errors = tuple(errors)
        return registry

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(f"unknown tool '{name}'") from None

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of just `names` (in this registry's order); ConfigError
        naming any that this registry does not have."""
        wanted = set(names)
        missing = sorted(wanted - self._tools.keys())
        if missing:
            raise ConfigError(f"unknown tool(s): {', '.join(repr(n) for n in missing)}")
        return ToolRegistry(t for n, t in self._tools.items() if n in wanted)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
