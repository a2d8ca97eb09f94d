"""The `metis` command line: a thin layer above metis_model and metis_runtime.

`main` loads on first use (PEP 562), so `metis-hook` (`_hook_client`) starts
without click and the CLI's command table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._main import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from ._main import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
