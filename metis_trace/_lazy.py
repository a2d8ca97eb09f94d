"""Lazy package exports (PEP 562), so importing one part of a package is cheap.

`metis conform` on a transcript needs `metis_check.transcripts` only; without
this, importing any submodule would first run the package's `__init__` and
load the whole model (pydantic schema included), about 0.1 s of CPU.

A package names each export once, as an explicit re-export under
`if TYPE_CHECKING:` (`from ._loop import step as step`). The type checker
reads those imports; at run time they do not execute, and `lazy_exports`
reads them from the package's source instead, to know where each name lives
and to make `__all__`. This is the idea of scientific-python's `lazy_loader`
(`attach_stub` reads a `.pyi` stub the same way); it is kept here, in 60
lines, so that the one list stays in `__init__.py` itself, beside the
package's docstring, and the format library needs no dependency for it.
`tests/test_architecture.py` checks that every name resolves and that none
loads eagerly.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports", "type_checking_imports"]


def type_checking_imports(source: str) -> dict[str, tuple[str, str]]:
    """Each name imported under a top-level `if TYPE_CHECKING:` (or
    `if typing.TYPE_CHECKING:`) in `source`: its module and its name there."""
    where: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom):
                raise ImportError(f"line {stmt.lineno}: only `from ... import` under TYPE_CHECKING")
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                where[alias.asname or alias.name] = (module, alias.name)
    return where


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """`__getattr__`, `__dir__` and `__all__` for `package`, whose
    `__init__.py` is `init_file`.

    A name is imported from its submodule on first use and then cached in the
    package's namespace, so later lookups cost nothing.
    """
    where = type_checking_imports(Path(init_file).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = found
        value = getattr(importlib.import_module(module, package), original)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__, sorted(where)
