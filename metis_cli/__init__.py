"""The `metis` command line: a thin layer above metis_model and metis_runtime.

`main` loads on first use (PEP 562), so `metis-hook` (`_hook_client`) starts
without click and the CLI's command table.
"""

import typing as _typing

from metis_model._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._main import main

__all__ = ["main"]

__getattr__, __dir__ = _lazy_exports(__name__, {"._main": ("main",)})
