"""The `metis` command line: a thin layer above metis_model and metis_runtime.

`main` loads on first use (PEP 562), so `metis-hook` (`_hook_client`) starts
without click and the CLI's command table, and `metis --version` without
anything of metis_model.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
    from ._main import main

__all__ = ["main"]


def __getattr__(name: str) -> _typing.Any:
    if name == "main":
        from ._main import main

        globals()["main"] = main
        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
