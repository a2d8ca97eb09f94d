"""The `metis` command line: a thin layer above metis_model and metis_runtime."""

from ._main import main

__all__ = ["main"]
