"""Lazy package exports (PEP 562) for the runtime's packages.

Importing `metis_runtime._input` (the hardened reader that light commands
use) runs `metis_runtime/__init__.py` first; with its exports loaded on first
use, that import does not bring in the loop, the providers or the gate.

The runtime keeps its own copy of this packaging helper instead of importing
`metis_model._lazy`: it imports nothing of `metis_model` but the trace format
(`tests/test_architecture.py`), so that conformance never checks the model
against itself. A package lists `{".submodule": ("Name", ...)}`, the same
imports under `if TYPE_CHECKING:`, and a literal `__all__`; the architecture
tests check that the three agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: a name is imported from its
    submodule on first use, then cached in the package's namespace."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
