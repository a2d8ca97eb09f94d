"""Lazy package exports (PEP 562), so importing one part of a package is cheap.

`metis conform` on a transcript needs `metis_check.transcripts` only; without
this, importing any submodule would first run the package's `__init__` and
load the whole model (pydantic schema included), about 0.1 s of CPU.

A package lists its exports as `{".submodule": ("Name", ...)}`, keeps the
same imports under `if TYPE_CHECKING:` for the type checker, and a literal
`__all__`; `tests/test_architecture.py` checks that the three agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`.

    A name is imported from its submodule on first use and then cached in the
    package's namespace, so later lookups cost nothing.
    """
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
